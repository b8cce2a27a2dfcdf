// The Rollout and Target rows a rollout reads and writes, and how they map to the planner's plain data.
import { createHash } from 'node:crypto';
import { policyDenialSchema } from '@flotilla/contract';
import { asRecord, toJson } from '../../common/json.js';
import type { Prisma, Rollout } from '../../generated/prisma/client.js';
import { emptyProgress, type PlanState, type PlanTarget, type RolloutProgress } from './rollout-plan.js';

type Tx = Prisma.TransactionClient;

/** Rollouts that still move (or wait for a person); the others are history. */
export const ACTIVE = ['Progressing', 'Paused'];

/**
 * The targets of an appset a rollout moves: rendered, and not being deleted with their objects (the
 * agent of one keeps the bundle it last ran until it deletes it).
 */
export const rolledOut = (appSetId: string) =>
  ({ appSetId, bundleDigest: { not: null }, deletionId: null }) satisfies Prisma.TargetWhereInput;

export const targetWithPlanInputs = {
  cluster: { select: { name: true, labels: true, lastSeenAt: true } },
  pin: true,
} satisfies Prisma.TargetInclude;
export type TargetRow = Prisma.TargetGetPayload<{ include: typeof targetWithPlanInputs }>;

/**
 * The revision a rollout moves: the commit every target resolved, or (targets following different
 * refs) a short hash of the set, so that one rollout still covers one expansion.
 */
export function rolloutRevision(revisions: string[]): string {
  const unique = [...new Set(revisions)].sort();
  if (unique.length === 1 && unique[0] !== undefined) return unique[0];
  return `mix-${createHash('sha256').update(unique.join('\n')).digest('hex').slice(0, 16)}`;
}

export async function lockRollout(tx: Tx, appSetId: string, revision: string): Promise<Rollout | null> {
  await tx.$queryRaw`SELECT id FROM "Rollout" WHERE "appSetId" = ${appSetId} AND revision = ${revision} FOR UPDATE`;
  return tx.rollout.findUnique({ where: { appSetId_revision: { appSetId, revision } } });
}

export async function markFailed(tx: Tx, appSetId: string, revision: string, reason: string): Promise<void> {
  await tx.failedRevision.upsert({
    where: { appSetId_revision: { appSetId, revision } },
    create: { appSetId, revision, reason },
    update: {},
  });
}

export function activePin(t: TargetRow, now: Date): TargetRow['pin'] {
  return t.pin && (t.pin.expiresAt === null || t.pin.expiresAt > now) ? t.pin : null;
}

export function planTarget(t: TargetRow, now: Date): PlanTarget {
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
    policyDenied: policyDeniedBy(t),
  };
}

/** The policy that denies the target's current bundle, if any (see release/policies/). */
export function policyDeniedBy(t: Pick<TargetRow, 'policyDenial' | 'bundleDigest'>): string | null {
  const denial = policyDenialSchema.safeParse(t.policyDenial);
  return denial.success && denial.data.digest === t.bundleDigest ? denial.data.policy : null;
}

export function stateOf(r: Rollout): PlanState {
  return {
    stepIndex: r.stepIndex,
    stepStartedAt: r.stepStartedAt,
    bakeStartedAt: r.bakeStartedAt,
    gateOpened: r.gateOpened,
    progress: { ...emptyProgress(), ...(r.progress as Partial<RolloutProgress>) },
  };
}

export function planStateData(s: PlanState) {
  return {
    stepIndex: s.stepIndex,
    stepStartedAt: s.stepStartedAt,
    bakeStartedAt: s.bakeStartedAt,
    gateOpened: s.gateOpened,
    progress: toJson(s.progress),
  };
}
