import { type LabelSelector } from '@flotilla/labels';
import { compileSelector } from '@flotilla/labels';

/** What a step needs for assignment: its name and the clusters it picks. */
export interface StepSelector {
  name: string;
  selector: LabelSelector;
}

/** What a target needs for assignment: its name (the order within a step) and its cluster's labels. */
export interface StepCandidate {
  name: string;
  clusterLabels: Record<string, string>;
}

/** The name a step is shown under when the strategy gives none: `step-1`, `step-2`, … */
export function stepName(step: { name?: string | undefined }, index: number): string {
  return step.name ?? `step-${index + 1}`;
}

/**
 * The steps with their targets: each target belongs to the first step whose selector matches its
 * cluster's labels. Targets no step selects form a last step, `remaining`, under the last step's
 * limits — a change never silently stops short of part of the fleet.
 */
export function assignSteps<S extends StepSelector, T extends StepCandidate>(
  steps: readonly S[],
  targets: readonly T[],
): { step: S; targets: T[] }[] {
  const matchers = steps.map((s, i) => compileSelector(s.selector, `spec.rollout.steps[${i}].selector`));
  const groups = steps.map((step) => ({ step, targets: [] as T[] }));
  const rest: T[] = [];
  for (const t of [...targets].sort((a, b) => compare(a.name, b.name))) {
    const i = matchers.findIndex((m) => m(t.clusterLabels));
    if (i === -1) rest.push(t);
    else groups[i]?.targets.push(t);
  }
  const last = steps.at(-1);
  if (rest.length > 0 && last)
    groups.push({ step: { ...last, name: 'remaining', selector: {} }, targets: rest });
  return groups;
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
