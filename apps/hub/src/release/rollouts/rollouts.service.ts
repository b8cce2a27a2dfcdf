import type { ReleaseAfterExpansion } from '../../desired-state/release-after-expansion.js';
import { Inject, Injectable, Logger } from '@nestjs/common';
import { type QueuePayloads, systemActor } from '@flotilla/contract';
import { HUB_CONFIG, type HubConfig } from '../../config/hub-config.js';
import { Database } from '../../db/database.js';
import { HubError } from '../../common/hub-error.js';
import { toJson } from '../../common/json.js';
import { AuditLog, type AuditEntry } from '../../audit/audit.service.js';
import { ClusterWakeups } from '../../wakeups/cluster-wakeups.service.js';
import { JobQueues } from '../../queues/job-queues.service.js';
import type { ApplicationSet, Prisma, Rollout } from '../../generated/prisma/client.js';
import { emptyProgress, planRollout, type PlanResult } from './rollout-plan.js';
import { rolloutStrategyOf, type RolloutStrategy } from '../../desired-state/rollout-strategy.js';
import {
  ACTIVE,
  lockRollout,
  markFailed,
  planStateData,
  planTarget,
  rolledOut,
  rolloutRevision,
  stateOf,
  targetWithPlanInputs,
  type TargetRow,
} from './rollout-records.js';
import { releaseNamed, releaseTargets } from './target-release.js';
import { PolicyGate } from '../policies/policy-gate.service.js';
import { RestoredPins } from '../pins/restored-pins.service.js';

type Tx = Prisma.TransactionClient;

/**
 * Separates what Git wants (target.desiredRevision, written by expansion) from what agents are
 * given (target.releasedRevision). Without `spec.rollout` expansion releases at once; with it, a
 * new revision becomes a Rollout row moved step by step by repeatable `rollout` ticks. State is rows
 * and Redis job schedulers only, so a restarted hub carries on. (People's controls: RolloutControls;
 * what they read: RolloutQueries.)
 */
@Injectable()
export class RolloutsService implements ReleaseAfterExpansion {
  private readonly logger = new Logger(RolloutsService.name);

  constructor(
    private readonly db: Database,
    private readonly audit: AuditLog,
    private readonly queues: JobQueues,
    private readonly wakeups: ClusterWakeups,
    private readonly policyGate: PolicyGate,
    private readonly restoredPins: RestoredPins,
    @Inject(HUB_CONFIG) private readonly config: HubConfig,
  ) {}

  /**
   * Called after every expansion (idempotent, so a crash in between is repaired by the next one):
   * releases at once without a strategy, otherwise starts or continues the rollout of the revision.
   */
  async afterExpansion(appSetId: string): Promise<ReadonlySet<string>> {
    const none = new Set<string>();
    const appSet = await this.db.prisma.applicationSet.findUnique({ where: { id: appSetId } });
    if (!appSet) return none;
    // Git renders what a rollback pinned again (its revert merged): the pin has done its job.
    await this.restoredPins.liftRestored(appSetId);
    const targets = await this.db.prisma.target.findMany({
      where: rolledOut(appSetId),
      orderBy: { name: 'asc' },
    });
    const changed = targets.filter(
      (t) => t.releasedDigest !== t.bundleDigest || t.releasedRevision !== t.desiredRevision,
    );
    // The admission policies judge every new bundle first: a denied one is never released.
    const held = await this.policyGate.judge(appSet, targets, changed);
    const behind = changed.filter((t) => !held.has(t.id));
    if (behind.length === 0) return none;
    const strategy = this.strategyOf(appSet);
    if (strategy === undefined) return none;
    const revision = rolloutRevision(targets.map((t) => t.desiredRevision));
    if (!strategy) {
      return this.releaseNow(appSet.name, behind, 'no rollout strategy');
    }
    const failed = await this.db.prisma.failedRevision.findUnique({
      where: { appSetId_revision: { appSetId, revision } },
    });
    if (failed) {
      this.logger.warn(
        `appset ${appSet.name}: revision ${revision} failed before (${failed.reason}); not released`,
      );
      return none;
    }
    const existing = await this.db.prisma.rollout.findUnique({
      where: { appSetId_revision: { appSetId, revision } },
    });
    if (existing?.status === 'Completed') {
      // The revision is proven on this appset: a cluster added since gets it without a new rollout.
      return this.releaseNow(appSet.name, behind, `rollout of ${revision.slice(0, 12)} completed`);
    }
    if (existing?.status === 'Halted') return none;
    const payload = { appSetId, revision };
    if (!existing || existing.status === 'Superseded')
      await this.start(appSet, revision, strategy, targets.length, existing);
    await this.queues.scheduleRolloutTicks(payload, this.config.rollouts.tickSeconds);
    await this.queues.enqueue('rollout', payload, { variant: `now${Date.now()}` });
    // The rollout's steps release (and wake) later, each on its own.
    return none;
  }

  /** The appset's strategy, null without one; undefined (logged) when its document no longer parses. */
  private strategyOf(appSet: ApplicationSet): RolloutStrategy | null | undefined {
    try {
      return rolloutStrategyOf(appSet.spec);
    } catch (e) {
      // Checked when the appset was stored; a document stored before rollouts existed is held back.
      if (!(e instanceof HubError)) throw e;
      this.logger.warn(`appset ${appSet.name}: ${e.message}; nothing released`);
      return undefined;
    }
  }

  /**
   * Starts the rollout of `revision` (a new row, or a superseded one from the start again) and
   * supersedes the appset's other active rollouts, whose ticks then stop.
   */
  private async start(
    appSet: ApplicationSet,
    revision: string,
    strategy: RolloutStrategy,
    targetCount: number,
    existing: Rollout | null,
  ): Promise<void> {
    const appSetId = appSet.id;
    const superseded = await this.db.prisma.$transaction(async (tx) => {
      const others = await tx.rollout.findMany({
        where: { appSetId, status: { in: ACTIVE }, revision: { not: revision } },
      });
      await tx.rollout.updateMany({
        where: { id: { in: others.map((o) => o.id) } },
        data: { status: 'Superseded', finishedAt: new Date(), message: `superseded by ${revision}` },
      });
      await writeStartedRollout(tx, appSetId, revision, strategy, existing);
      await this.audit.recordMany(
        [
          ...others.map((o) => ({
            actor: systemActor('rollouts'),
            action: 'rollout.superseded',
            scope: `appset:${appSet.name}`,
            details: { revision: o.revision, by: revision },
          })),
          {
            actor: systemActor('rollouts'),
            action: 'rollout.started',
            scope: `appset:${appSet.name}`,
            details: { revision, steps: strategy.steps.map((s) => s.name), targets: targetCount },
          },
        ],
        tx,
      );
      return others;
    });
    for (const o of superseded) await this.queues.unscheduleRolloutTicks({ appSetId, revision: o.revision });
  }

  /** One step of the state machine, under a row lock so overlapping ticks take turns. */
  async tick(p: QueuePayloads['rollout']): Promise<{ status: string; message: string }> {
    const now = new Date();
    let released: TargetRow[] = [];
    const result = await this.db.prisma.$transaction(async (tx) => {
      const rollout = await lockRollout(tx, p.appSetId, p.revision);
      if (!rollout) return { status: 'Gone', message: 'no such rollout' };
      if (rollout.status !== 'Progressing') return { status: rollout.status, message: rollout.message };
      const appSet = await tx.applicationSet.findUniqueOrThrow({ where: { id: p.appSetId } });
      const targets = await tx.target.findMany({
        where: rolledOut(p.appSetId),
        include: targetWithPlanInputs,
      });
      const plan = planRollout(
        rollout.strategy as unknown as RolloutStrategy,
        stateOf(rollout),
        targets.map((t) => planTarget(t, now)),
        { now, offlineAfterSeconds: this.config.rollouts.offlineAfterSeconds },
      );
      released = await releaseNamed(tx, targets, plan.release, now);
      await tx.rollout.update({
        where: { id: rollout.id },
        data: {
          ...planStateData(plan.state),
          status: plan.status,
          message: plan.message,
          ...(plan.status !== 'Progressing' && { finishedAt: now }),
        },
      });
      if (plan.status === 'Halted') await markFailed(tx, p.appSetId, p.revision, plan.message);
      await this.audit.recordMany(tickAuditEntries(plan, p.revision, `appset:${appSet.name}`), tx);
      return { status: plan.status, message: plan.message };
    });
    await this.wakeups.notify(released.map((t) => t.clusterId));
    if (result.status !== 'Progressing' && result.status !== 'Paused')
      await this.queues.unscheduleRolloutTicks(p);
    return result;
  }

  private async releaseNow(
    appSetName: string,
    targets: {
      id: string;
      name: string;
      clusterId: string;
      desiredRevision: string;
      bundleDigest: string | null;
    }[],
    why: string,
  ): Promise<ReadonlySet<string>> {
    const now = new Date();
    await this.db.prisma.$transaction(async (tx) => {
      await releaseTargets(tx, targets, now);
      await this.audit.record(
        {
          actor: systemActor('rollouts'),
          action: 'rollout.released',
          scope: `appset:${appSetName}`,
          details: { why, targets: targets.map((t) => ({ name: t.name, revision: t.desiredRevision })) },
        },
        tx,
      );
    });
    const woken = new Set(targets.map((t) => t.clusterId));
    await this.wakeups.notify(woken);
    return woken;
  }
}

/** The rollout row of a rollout starting now: created, or (superseded before) started over. */
async function writeStartedRollout(
  tx: Tx,
  appSetId: string,
  revision: string,
  strategy: RolloutStrategy,
  existing: Rollout | null,
): Promise<void> {
  const state = { stepIndex: 0, stepStartedAt: new Date(), bakeStartedAt: null, gateOpened: false };
  if (existing) {
    await tx.rollout.update({
      where: { id: existing.id },
      data: {
        ...state,
        status: 'Progressing',
        strategy: toJson(strategy),
        progress: toJson(emptyProgress()),
        finishedAt: null,
        message: 'starting',
      },
    });
  } else {
    await tx.rollout.create({
      data: {
        appSetId,
        revision,
        strategy: toJson(strategy),
        ...state,
        progress: toJson(emptyProgress()),
        message: 'starting',
      },
    });
  }
}

/** What one tick did, for the audit log: the planner's events, the targets released, how it ended. */
function tickAuditEntries(plan: PlanResult, revision: string, scope: string): AuditEntry[] {
  const entries: AuditEntry[] = plan.events.map((e) => ({
    actor: systemActor('rollouts'),
    action: e.action,
    scope,
    details: { revision, ...e.details },
  }));
  if (plan.release.length > 0)
    entries.push({
      actor: systemActor('rollouts'),
      action: 'rollout.released',
      scope,
      details: { revision, step: plan.state.stepIndex, targets: plan.release },
    });
  if (plan.status !== 'Progressing')
    entries.push({
      actor: systemActor('rollouts'),
      action: `rollout.${plan.status.toLowerCase()}`,
      scope,
      details: { revision, message: plan.message },
    });
  return entries;
}
