import { rolloutStrategySpecSchema } from '@flotilla/fleet-config';
import { type LabelSelector } from '@flotilla/labels';
import { parseGoDuration } from '@flotilla/windows';
import { zodDetails } from '@flotilla/contract';
import { stepName } from '@flotilla/plan';
import { HubError } from '../common/hub-error.js';

/** How long a released target may take to be synced and Healthy when a step does not say. */
export const DEFAULT_PROGRESS_DEADLINE_SECONDS = 600;

/** One step, with durations in seconds and the name it is shown under. */
export interface RolloutStep {
  name: string;
  selector: LabelSelector;
  /** A count or a percentage of the step's clusters; 0 is a manual gate. */
  maxUnavailable: number | string;
  bakeSeconds: number;
  progressDeadlineSeconds: number;
  /** Failed or offline clusters the step tolerates (count or percentage, rounded down). */
  failureBudget: number | string;
}

export interface RolloutStrategy {
  steps: RolloutStep[];
}

/**
 * `spec.rollout` of an appset: the same shape as the fleet repository's RolloutStrategy spec (see
 * libs/fleet-config), written inline — `{steps: [{name, selector, maxUnavailable, bakeTime,
 * progressDeadline, failureBudget}]}` with Go durations. Absent: every target is released at once.
 */
export function rolloutStrategyOf(document: unknown): RolloutStrategy | null {
  const raw = asObject(asObject(document)?.['spec'])?.['rollout'];
  if (raw === undefined || raw === null) return null;
  const parsed = rolloutStrategySpecSchema.safeParse(raw);
  if (!parsed.success) {
    const details = zodDetails(parsed.error).map((d) => ({
      ...d,
      path: d.path ? `spec.rollout.${d.path}` : 'spec.rollout',
    }));
    const first = details[0];
    throw new HubError(
      400,
      'invalid-appset',
      `invalid rollout strategy: ${first ? `${first.path}: ${first.message}` : 'unreadable'}`,
      first?.path ?? 'spec.rollout',
      details,
    );
  }
  return {
    steps: parsed.data.steps.map((s, i) => ({
      name: stepName(s, i),
      selector: s.selector,
      maxUnavailable: s.maxUnavailable,
      bakeSeconds: parseGoDuration(s.bakeTime) / 1000,
      progressDeadlineSeconds:
        s.progressDeadline === undefined
          ? DEFAULT_PROGRESS_DEADLINE_SECONDS
          : Math.max(1, Math.round(parseGoDuration(s.progressDeadline) / 1000)),
      failureBudget: s.failureBudget,
    })),
  };
}

/** Validates `spec.rollout` before an appset is stored (a bad value names its field, 400). */
export function checkRolloutSpec(document: unknown): void {
  rolloutStrategyOf(document);
}

/**
 * A count or a percentage of `total`, rounded down. `minOne` is maxUnavailable's rule (a non-zero
 * percentage of a small step still moves one cluster); a failure budget has no minimum.
 */
export function resolveCount(value: number | string, total: number, minOne: boolean): number {
  if (typeof value === 'number') return Math.min(value, total);
  const percent = Number(value.slice(0, -1));
  if (percent === 0) return 0;
  const n = Math.floor((percent * total) / 100);
  return minOne ? Math.max(1, n) : n;
}

function asObject(v: unknown): Record<string, unknown> | undefined {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
    ? (v as Record<string, unknown>)
    : undefined;
}
