// What people do to a running rollout: pause it, resume it, promote it past a gate or a step.
import type { AuditActor, RolloutView } from '@flotilla/contract';
import { Inject, Injectable } from '@nestjs/common';
import { HUB_CONFIG, type HubConfig } from '../../config/hub-config.js';
import { Database } from '../../db/database.js';
import { HubError } from '../../common/hub-error.js';
import { AuditLog } from '../../audit/audit.service.js';
import { ClusterWakeups } from '../../wakeups/cluster-wakeups.service.js';
import { JobQueues } from '../../queues/job-queues.service.js';
import type { Prisma, Rollout } from '../../generated/prisma/client.js';
import type { RolloutStrategy } from '../../desired-state/rollout-strategy.js';
import { promoteRollout } from './rollout-plan.js';
import {
  lockRollout,
  planStateData,
  planTarget,
  rolledOut,
  stateOf,
  targetWithPlanInputs,
  type TargetRow,
} from './rollout-records.js';
import { releaseNamed } from './target-release.js';
import { rolloutView } from './rollout-view.js';

type Tx = Prisma.TransactionClient;
type RolloutChange = Prisma.RolloutUpdateInput & { details?: Record<string, unknown> };

/**
 * Each control changes the appset's newest rollout under its row lock, audited with the reason, and
 * schedules its ticks again when it moves on.
 */
@Injectable()
export class RolloutControls {
  constructor(
    private readonly db: Database,
    private readonly audit: AuditLog,
    private readonly queues: JobQueues,
    private readonly wakeups: ClusterWakeups,
    @Inject(HUB_CONFIG) private readonly config: HubConfig,
  ) {}

  async pause(appSetName: string, actor: AuditActor, reason: string): Promise<RolloutView> {
    return this.transition(appSetName, actor, 'rollout.paused', reason, (r) => {
      if (r.status !== 'Progressing')
        throw new HubError(
          409,
          'rollout-not-progressing',
          `the rollout of ${r.revision} is ${r.status}, not Progressing`,
        );
      return { status: 'Paused', message: `paused by ${actor}: ${reason}` };
    });
  }

  async resume(appSetName: string, actor: AuditActor, reason: string): Promise<RolloutView> {
    return this.transition(appSetName, actor, 'rollout.resumed', reason, (r) => {
      if (r.status !== 'Paused')
        throw new HubError(
          409,
          'rollout-not-paused',
          r.status === 'Halted'
            ? `the rollout of ${r.revision} halted (${r.message}); only promote or a new commit moves it on`
            : `the rollout of ${r.revision} is ${r.status}, not Paused`,
        );
      return { status: 'Progressing', message: `resumed by ${actor}` };
    });
  }

  /** Opens a manual gate, or stops waiting on the current step (releasing what it holds back). */
  async promote(appSetName: string, actor: AuditActor, reason: string): Promise<RolloutView> {
    let released: TargetRow[] = [];
    const view = await this.transition(
      appSetName,
      actor,
      'rollout.promoted',
      reason,
      async (r, targets, tx) => {
        if (r.status === 'Completed' || r.status === 'Superseded')
          throw new HubError(409, 'rollout-finished', `the rollout of ${r.revision} is ${r.status}`);
        const now = new Date();
        const promoted = promoteRollout(
          r.strategy as unknown as RolloutStrategy,
          stateOf(r),
          targets.map((t) => planTarget(t, now)),
          now,
        );
        released = await releaseNamed(tx, targets, promoted.release, now);
        return {
          ...planStateData(promoted.state),
          status: 'Progressing',
          finishedAt: null,
          message: `promoted by ${actor} (${promoted.what}): ${reason}`,
          details: { what: promoted.what, released: promoted.release },
        };
      },
    );
    await this.wakeups.notify(released.map((t) => t.clusterId));
    return view;
  }

  private async transition(
    appSetName: string,
    actor: AuditActor,
    action: string,
    reason: string,
    change: (r: Rollout, targets: TargetRow[], tx: Tx) => RolloutChange | Promise<RolloutChange>,
  ): Promise<RolloutView> {
    const appSet = await this.db.prisma.applicationSet.findUnique({ where: { name: appSetName } });
    if (!appSet) throw HubError.notFound('appset', appSetName);
    const row = await this.db.prisma.$transaction(async (tx) => {
      const newest = await tx.rollout.findFirst({
        where: { appSetId: appSet.id },
        orderBy: { createdAt: 'desc' },
      });
      if (!newest) throw new HubError(404, 'not-found', `appset "${appSetName}" has no rollout`);
      const r = await lockRollout(tx, appSet.id, newest.revision);
      if (!r) throw new HubError(404, 'not-found', `appset "${appSetName}" has no rollout`);
      const targets = await tx.target.findMany({
        where: rolledOut(appSet.id),
        include: targetWithPlanInputs,
      });
      const { details, ...data } = await change(r, targets, tx);
      const updated = await tx.rollout.update({ where: { id: r.id }, data });
      await this.audit.record(
        {
          actor,
          action,
          scope: `appset:${appSetName}`,
          details: { revision: r.revision, reason, from: r.status, to: updated.status, ...details },
        },
        tx,
      );
      return updated;
    });
    const payload = { appSetId: appSet.id, revision: row.revision };
    if (row.status === 'Progressing') {
      await this.queues.scheduleRolloutTicks(payload, this.config.rollouts.tickSeconds);
      await this.queues.enqueue('rollout', payload, { variant: `now${Date.now()}` });
    }
    return rolloutView(row, appSetName);
  }
}
