import { createHash } from 'node:crypto';
import { Inject, Injectable, Logger } from '@nestjs/common';
import type { QueuePayloads, RolloutDetailView, RolloutView } from '@flotilla/contract';
import { HUB_CONFIG, type HubConfig } from '../config/hub-config.js';
import { Database } from '../db/database.js';
import { HubError } from '../common/hub-error.js';
import { isPaged, pageArgs, pageOf, type PageQuery } from '../common/name-page.js';
import { asRecord, toJson } from '../common/json.js';
import { AuditLog, type AuditEntry } from '../audit/audit.service.js';
import { ClusterWakeups } from '../queues/cluster-wakeups.service.js';
import { JobQueues } from '../queues/job-queues.service.js';
import { Prisma, type Rollout } from '../generated/prisma/client.js';
import {
  emptyProgress,
  planRollout,
  promoteRollout,
  type PlanState,
  type PlanTarget,
  type RolloutProgress,
} from './rollout-plan.js';
import { rolloutStrategyOf, type RolloutStrategy } from './rollout-strategy.js';

type Tx = Prisma.TransactionClient;
type RolloutChange = Prisma.RolloutUpdateInput & { details?: Record<string, unknown> };

/** Rollouts that still move (or wait for a person); the others are history. */
export const ACTIVE = ['Progressing', 'Paused'];

/**
 * The targets of an appset a rollout moves: rendered, and not being deleted with their objects (the
 * agent of one keeps the bundle it last ran until it deletes it).
 */
const rolledOut = (appSetId: string) =>
  ({ appSetId, bundleDigest: { not: null }, deletionId: null }) satisfies Prisma.TargetWhereInput;

const targetWithPlanInputs = {
  cluster: { select: { name: true, labels: true, lastSeenAt: true } },
  pin: true,
} satisfies Prisma.TargetInclude;
type TargetRow = Prisma.TargetGetPayload<{ include: typeof targetWithPlanInputs }>;

/**
 * Separates what Git wants (target.desiredRevision, written by expansion) from what agents are
 * given (target.releasedRevision). Without `spec.rollout` expansion releases at once; with it, a
 * new revision becomes a Rollout row moved step by step by repeatable `rollout` ticks. State is rows
 * and Redis job schedulers only, so a restarted hub carries on.
 */
@Injectable()
export class RolloutsService {
  private readonly logger = new Logger(RolloutsService.name);

  constructor(
    private readonly db: Database,
    private readonly audit: AuditLog,
    private readonly queues: JobQueues,
    private readonly wakeups: ClusterWakeups,
    @Inject(HUB_CONFIG) private readonly config: HubConfig,
  ) {}

  /**
   * Called after every expansion (idempotent, so a crash in between is repaired by the next one):
   * releases at once without a strategy, otherwise starts or continues the rollout of the revision.
   */
  async afterExpansion(appSetId: string): Promise<void> {
    const appSet = await this.db.prisma.applicationSet.findUnique({ where: { id: appSetId } });
    if (!appSet) return;
    const targets = await this.db.prisma.target.findMany({
      where: rolledOut(appSetId),
      orderBy: { name: 'asc' },
    });
    const behind = targets.filter(
      (t) => t.releasedDigest !== t.bundleDigest || t.releasedRevision !== t.desiredRevision,
    );
    if (behind.length === 0) return;
    let strategy: RolloutStrategy | null;
    try {
      strategy = rolloutStrategyOf(appSet.spec);
    } catch (e) {
      // Checked when the appset was stored; a document stored before rollouts existed is held back.
      if (!(e instanceof HubError)) throw e;
      this.logger.warn(`appset ${appSet.name}: ${e.message}; nothing released`);
      return;
    }
    const revision = rolloutRevision(targets.map((t) => t.desiredRevision));
    if (!strategy) {
      await this.releaseNow(appSet.name, behind, 'no rollout strategy');
      return;
    }
    const failed = await this.db.prisma.failedRevision.findUnique({
      where: { appSetId_revision: { appSetId, revision } },
    });
    if (failed) {
      this.logger.warn(
        `appset ${appSet.name}: revision ${revision} failed before (${failed.reason}); not released`,
      );
      return;
    }
    const existing = await this.db.prisma.rollout.findUnique({
      where: { appSetId_revision: { appSetId, revision } },
    });
    if (existing?.status === 'Completed') {
      // The revision is proven on this appset: a cluster added since gets it without a new rollout.
      await this.releaseNow(appSet.name, behind, `rollout of ${revision.slice(0, 12)} completed`);
      return;
    }
    if (existing?.status === 'Halted') return;
    const payload = { appSetId, revision };
    if (!existing || existing.status === 'Superseded') {
      const superseded = await this.db.prisma.$transaction(async (tx) => {
        const others = await tx.rollout.findMany({
          where: { appSetId, status: { in: ACTIVE }, revision: { not: revision } },
        });
        await tx.rollout.updateMany({
          where: { id: { in: others.map((o) => o.id) } },
          data: { status: 'Superseded', finishedAt: new Date(), message: `superseded by ${revision}` },
        });
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
        await this.audit.recordMany(
          [
            ...others.map((o) => ({
              actor: 'hub',
              action: 'rollout.superseded',
              scope: `appset:${appSet.name}`,
              details: { revision: o.revision, by: revision },
            })),
            {
              actor: 'hub',
              action: 'rollout.started',
              scope: `appset:${appSet.name}`,
              details: { revision, steps: strategy.steps.map((s) => s.name), targets: targets.length },
            },
          ],
          tx,
        );
        return others;
      });
      for (const o of superseded)
        await this.queues.unscheduleRolloutTicks({ appSetId, revision: o.revision });
    }
    await this.queues.scheduleRolloutTicks(payload, this.config.rollouts.tickSeconds);
    await this.queues.enqueue('rollout', payload, { variant: `now${Date.now()}` });
  }

  /** One step of the state machine, under a row lock so overlapping ticks take turns. */
  async tick(p: QueuePayloads['rollout']): Promise<{ status: string; message: string }> {
    const now = new Date();
    const released: TargetRow[] = [];
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
      const byName = new Map(targets.map((t) => [t.name, t]));
      for (const name of plan.release) {
        const t = byName.get(name);
        if (!t) continue;
        await releaseTarget(tx, t, now);
        released.push(t);
      }
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
      const scope = `appset:${appSet.name}`;
      const entries: AuditEntry[] = plan.events.map((e) => ({
        actor: 'hub',
        action: e.action,
        scope,
        details: { revision: p.revision, ...e.details },
      }));
      if (plan.release.length > 0)
        entries.push({
          actor: 'hub',
          action: 'rollout.released',
          scope,
          details: { revision: p.revision, step: plan.state.stepIndex, targets: plan.release },
        });
      if (plan.status !== 'Progressing')
        entries.push({
          actor: 'hub',
          action: `rollout.${plan.status.toLowerCase()}`,
          scope,
          details: { revision: p.revision, message: plan.message },
        });
      await this.audit.recordMany(entries, tx);
      return { status: plan.status, message: plan.message };
    });
    await this.wakeups.notify(released.map((t) => t.clusterId));
    if (result.status !== 'Progressing' && result.status !== 'Paused')
      await this.queues.unscheduleRolloutTicks(p);
    return result;
  }

  async list(appSetName?: string): Promise<RolloutView[]> {
    const rows = await this.db.prisma.rollout.findMany({
      where: appSetName ? { appSet: { name: appSetName } } : {},
      orderBy: [{ createdAt: 'desc' }],
      take: 200,
      include: { appSet: { select: { name: true } } },
    });
    return rows.map((r) => this.view(r, r.appSet.name));
  }

  /**
   * The appset's newest rollout (or the one of `revision`), with every target's place in it: all of
   * them, or with `limit`/`cursor` one page of them in name order (an appset on a thousand clusters
   * is a quarter of a megabyte whole).
   */
  async get(appSetName: string, revision?: string, page: PageQuery = {}): Promise<RolloutDetailView> {
    const appSet = await this.db.prisma.applicationSet.findUnique({ where: { name: appSetName } });
    if (!appSet) throw HubError.notFound('appset', appSetName);
    const rollout = await this.db.prisma.rollout.findFirst({
      where: { appSetId: appSet.id, ...(revision ? { revision } : {}) },
      orderBy: { createdAt: 'desc' },
    });
    if (!rollout)
      throw new HubError(
        404,
        'not-found',
        `appset "${appSetName}" has no rollout${revision ? ` of ${revision}` : ''}`,
      );
    const paged = isPaged(page);
    const args = paged ? pageArgs(page) : { where: {} };
    const [rows, targetCount] = await Promise.all([
      this.db.prisma.target.findMany({
        where: { appSetId: appSet.id, ...args.where },
        orderBy: { name: 'asc' },
        include: targetWithPlanInputs,
        ...('take' in args && { take: args.take }),
      }),
      this.db.prisma.target.count({ where: { appSetId: appSet.id } }),
    ]);
    const { rows: targets, nextCursor } = paged ? pageOf(rows, page) : { rows, nextCursor: null };
    const progress = stateOf(rollout).progress;
    return {
      ...this.view(rollout, appSet.name),
      targets: targets.map((t) => ({
        name: t.name,
        cluster: t.cluster.name,
        desiredRevision: t.desiredRevision,
        releasedRevision: t.releasedRevision,
        lastSyncedRevision: t.lastSyncedRevision,
        health: t.health,
        pinnedAt: activePin(t, new Date())?.revision ?? null,
        releasedAt: progress.released[t.name] ?? null,
        failed: progress.failed[t.name] ?? null,
        skipped: progress.skipped[t.name] ?? null,
      })),
      targetCount,
      nextCursor,
    };
  }

  async pause(appSetName: string, actor: string, reason: string) {
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

  async resume(appSetName: string, actor: string, reason: string) {
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
  async promote(appSetName: string, actor: string, reason: string) {
    const released: TargetRow[] = [];
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
        const byName = new Map(targets.map((t) => [t.name, t]));
        for (const name of promoted.release) {
          const t = byName.get(name);
          if (!t) continue;
          await releaseTarget(tx, t, now);
          released.push(t);
        }
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
    actor: string,
    action: string,
    reason: string,
    change: (r: Rollout, targets: TargetRow[], tx: Tx) => RolloutChange | Promise<RolloutChange>,
  ) {
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
    return this.view(row, appSetName);
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
  ): Promise<void> {
    const now = new Date();
    await this.db.prisma.$transaction(async (tx) => {
      await releaseTargets(tx, targets, now);
      await this.audit.record(
        {
          actor: 'hub',
          action: 'rollout.released',
          scope: `appset:${appSetName}`,
          details: { why, targets: targets.map((t) => ({ name: t.name, revision: t.desiredRevision })) },
        },
        tx,
      );
    });
    await this.wakeups.notify(targets.map((t) => t.clusterId));
  }

  private view(r: Rollout, appSetName: string): RolloutView {
    const strategy = r.strategy as unknown as RolloutStrategy;
    const step = strategy.steps[r.stepIndex];
    return {
      appSet: appSetName,
      revision: r.revision,
      status: r.status,
      step: step?.name ?? null,
      stepIndex: r.stepIndex,
      steps: strategy.steps.map((s) => s.name),
      message: r.message,
      stepStartedAt: r.stepStartedAt.toISOString(),
      bakeStartedAt: r.bakeStartedAt?.toISOString() ?? null,
      progress: stateOf(r).progress,
      createdAt: r.createdAt.toISOString(),
      finishedAt: r.finishedAt?.toISOString() ?? null,
    };
  }
}

/**
 * The revision a rollout moves: the commit every target resolved, or (targets following different
 * refs) a short hash of the set, so that one rollout still covers one expansion.
 */
export function rolloutRevision(revisions: string[]): string {
  const unique = [...new Set(revisions)].sort();
  if (unique.length === 1 && unique[0] !== undefined) return unique[0];
  return `mix-${createHash('sha256').update(unique.join('\n')).digest('hex').slice(0, 16)}`;
}

async function lockRollout(tx: Tx, appSetId: string, revision: string): Promise<Rollout | null> {
  await tx.$queryRaw`SELECT id FROM "Rollout" WHERE "appSetId" = ${appSetId} AND revision = ${revision} FOR UPDATE`;
  return tx.rollout.findUnique({ where: { appSetId_revision: { appSetId, revision } } });
}

/**
 * Releases many targets with one UPDATE per distinct (revision, bundle): a commit to an appset of
 * 1,000 targets has as many distinct bundles as apps, so 1,000 round trips inside the transaction
 * (seconds on a busy database) become about ten.
 */
async function releaseTargets(
  tx: Tx,
  targets: readonly { id: string; desiredRevision: string; bundleDigest: string | null }[],
  now: Date,
): Promise<void> {
  const groups = new Map<string, { revision: string; digest: string | null; ids: string[] }>();
  for (const t of targets) {
    const key = JSON.stringify([t.desiredRevision, t.bundleDigest]);
    const group = groups.get(key) ?? { revision: t.desiredRevision, digest: t.bundleDigest, ids: [] };
    group.ids.push(t.id);
    groups.set(key, group);
  }
  for (const g of groups.values()) {
    await tx.target.updateMany({
      where: { id: { in: g.ids } },
      data: { releasedRevision: g.revision, releasedDigest: g.digest, releasedAt: now },
    });
  }
}

async function releaseTarget(
  tx: Tx,
  t: { id: string; desiredRevision: string; bundleDigest: string | null },
  now: Date,
): Promise<void> {
  await tx.target.update({
    where: { id: t.id },
    data: { releasedRevision: t.desiredRevision, releasedDigest: t.bundleDigest, releasedAt: now },
  });
}

export async function markFailed(tx: Tx, appSetId: string, revision: string, reason: string): Promise<void> {
  await tx.failedRevision.upsert({
    where: { appSetId_revision: { appSetId, revision } },
    create: { appSetId, revision, reason },
    update: {},
  });
}

function activePin(t: TargetRow, now: Date): TargetRow['pin'] {
  return t.pin && (t.pin.expiresAt === null || t.pin.expiresAt > now) ? t.pin : null;
}

function planTarget(t: TargetRow, now: Date): PlanTarget {
  return {
    name: t.name,
    cluster: t.cluster.name,
    clusterLabels: asRecord(t.cluster.labels),
    clusterLastSeenAt: t.cluster.lastSeenAt,
    desiredRevision: t.desiredRevision,
    bundleDigest: t.bundleDigest ?? '',
    releasedRevision: t.releasedRevision,
    releasedDigest: t.releasedDigest,
    lastSyncedRevision: t.lastSyncedRevision,
    lastSyncedDigest: t.lastSyncedDigest,
    health: t.health,
    pinnedAt: activePin(t, now)?.revision ?? null,
  };
}

function stateOf(r: Rollout): PlanState {
  return {
    stepIndex: r.stepIndex,
    stepStartedAt: r.stepStartedAt,
    bakeStartedAt: r.bakeStartedAt,
    gateOpened: r.gateOpened,
    progress: { ...emptyProgress(), ...(r.progress as Partial<RolloutProgress>) },
  };
}

function planStateData(s: PlanState) {
  return {
    stepIndex: s.stepIndex,
    stepStartedAt: s.stepStartedAt,
    bakeStartedAt: s.bakeStartedAt,
    gateOpened: s.gateOpened,
    progress: toJson(s.progress),
  };
}
