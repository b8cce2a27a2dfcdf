import { type KubeObject } from '@flotilla/contract';
import { type DriftDifference } from './drift-differ.js';

interface ManagedFieldsEntry {
  manager?: string;
  time?: string;
}

/**
 * The field manager to name on a drift: the one owning most of the drifted live values (as the
 * differ read them from managedFields); on a tie, the one that wrote most recently.
 */
export function blameManager(live: KubeObject, differences: readonly DriftDifference[]): string | undefined {
  const votes = new Map<string, number>();
  for (const d of differences) for (const m of d.liveManagers ?? []) votes.set(m, (votes.get(m) ?? 0) + 1);
  if (votes.size === 0) return undefined;
  const lastWrite = new Map<string, string>();
  for (const e of (live.metadata['managedFields'] as ManagedFieldsEntry[] | undefined) ?? []) {
    if (e.manager && (e.time ?? '') > (lastWrite.get(e.manager) ?? ''))
      lastWrite.set(e.manager, e.time ?? '');
  }
  return [...votes.entries()].sort(
    ([a, va], [b, vb]) =>
      vb - va || (lastWrite.get(b) ?? '').localeCompare(lastWrite.get(a) ?? '') || a.localeCompare(b),
  )[0]?.[0];
}
