// Whether, and after how long, an agent may roll a failed revision back on its own, per appset.
import { Injectable } from '@nestjs/common';
import type { Assignment } from '@flotilla/contract';
import { compileSelector } from '@flotilla/labels';
import { Database } from '../db/database.js';
import { rolloutStrategyOf, type RolloutStrategy } from '../desired-state/rollout-strategy.js';

/** Appsets whose strategy is kept at most; beyond, the memory starts over (one read per appset again). */
const MAX_REMEMBERED = 10_000;

/**
 * The setting comes from the appset's rollout strategy (`spec.rollout`), read as the rollouts read
 * it (the stored document, parsed by rolloutStrategyOf). Parsed once per appset version and kept:
 * an assignments computation reads and parses only the appsets whose version changed since.
 */
@Injectable()
export class AutoRollbackSettings {
  /** Parsed `spec.rollout` per appset, valid while the appset's version (its updatedAt) is unchanged. */
  private readonly strategies = new Map<string, { version: number; strategy: RolloutStrategy | null }>();

  constructor(private readonly db: Database) {}

  /**
   * The automatic-rollback setting per appset for a cluster with these labels. `appSetVersion` is the
   * appset's updatedAt (ms) as the caller read it with its targets.
   */
  async byAppSet(
    targets: readonly { appSetId: string; appSetVersion: number }[],
    clusterLabels: Record<string, string>,
  ): Promise<Map<string, Pick<Assignment, 'autoRollback'>>> {
    await this.refresh(targets);
    const out = new Map<string, Pick<Assignment, 'autoRollback'>>();
    for (const { appSetId } of targets)
      if (!out.has(appSetId))
        out.set(appSetId, autoRollbackOf(this.strategies.get(appSetId)?.strategy ?? null, clusterLabels));
    return out;
  }

  /**
   * Reads, in one statement, the strategies of these appsets not kept at the version given: called
   * with the targets of every cluster of a burst first, each cluster's `byAppSet` then reads nothing.
   */
  async refresh(targets: readonly { appSetId: string; appSetVersion: number }[]): Promise<void> {
    const versions = new Map(targets.map((t) => [t.appSetId, t.appSetVersion]));
    const stale = [...versions].filter(([id, version]) => this.strategies.get(id)?.version !== version);
    if (stale.length > 0) await this.readStrategies(new Map(stale));
  }

  /**
   * Reads and parses the strategies of these appsets. Each is kept under the version the caller
   * read: the document read here is that version or a later one, and a later one only makes the
   * next computation read it again.
   */
  private async readStrategies(versions: Map<string, number>): Promise<void> {
    const appSets = await this.db.prisma.applicationSet.findMany({
      where: { id: { in: [...versions.keys()] } },
      select: { id: true, spec: true },
    });
    if (this.strategies.size > MAX_REMEMBERED) this.strategies.clear();
    for (const a of appSets) {
      const version = versions.get(a.id);
      if (version !== undefined) this.strategies.set(a.id, { version, strategy: strategyOrNull(a.spec) });
    }
  }
}

/** The appset's rollout strategy; null without one, or when the stored document no longer parses. */
function strategyOrNull(spec: unknown): RolloutStrategy | null {
  try {
    return rolloutStrategyOf(spec);
  } catch {
    return null; // refused when stored; an older document simply gets no automatic rollback
  }
}

/**
 * With a rollout strategy the agent may roll a failed revision back on its own, once the progress
 * deadline of the step that picks its cluster has passed.
 */
function autoRollbackOf(
  strategy: RolloutStrategy | null,
  clusterLabels: Record<string, string>,
): Pick<Assignment, 'autoRollback'> {
  if (!strategy) return {};
  const step =
    strategy.steps.find((s, i) => compileSelector(s.selector, `spec.rollout.steps[${i}]`)(clusterLabels)) ??
    strategy.steps.at(-1);
  return step ? { autoRollback: { progressDeadlineSeconds: step.progressDeadlineSeconds } } : {};
}
