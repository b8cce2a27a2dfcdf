// The Rollout row as people see it (the API, the CLI and the console).
import type { RolloutDetailView, RolloutView } from '@flotilla/contract';
import type { RolloutStrategy } from '../../desired-state/rollout-strategy.js';
import type { Rollout } from '../../generated/prisma/client.js';
import type { RolloutProgress } from './rollout-plan.js';
import { activePin, stateOf, type TargetRow } from './rollout-records.js';

export function rolloutView(r: Rollout, appSetName: string): RolloutView {
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

/** One target's place in a rollout: where Git wants it, what it was given, and what became of it. */
export function rolloutTargetView(
  t: TargetRow,
  progress: RolloutProgress,
  now: Date,
): RolloutDetailView['targets'][number] {
  return {
    name: t.name,
    cluster: t.cluster.name,
    desiredRevision: t.desiredRevision,
    releasedRevision: t.releasedRevision,
    lastSyncedRevision: t.lastSyncedRevision,
    health: t.health,
    pinnedAt: activePin(t, now)?.revision ?? null,
    releasedAt: progress.released[t.name] ?? null,
    failed: progress.failed[t.name] ?? null,
    skipped: progress.skipped[t.name] ?? null,
  };
}
