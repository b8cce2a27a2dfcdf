import { type KubeObject } from '@flotilla/contract';
import { orderForApply, syncWaveOf } from './apply-order.js';
import { type SyncRole, syncRoleOf } from './hooks.js';

/** One manifest of a run, with its part in it (a resource, a hook of some phases, skipped) and its wave. */
export interface Step {
  manifest: KubeObject;
  role: SyncRole;
  wave: number;
}

/** The manifests in apply order, each with its role and wave; throws on a wave or hook annotation it cannot read. */
export function stepsOf(manifests: readonly KubeObject[]): Step[] {
  return orderForApply(manifests).map((manifest) => ({
    manifest,
    role: syncRoleOf(manifest),
    wave: syncWaveOf(manifest),
  }));
}

export interface Wave {
  wave: number;
  steps: Step[];
  /** Objects no longer declared that this wave deletes (see planPrune). */
  prune: KubeObject[];
}

/**
 * Consecutive steps with the same wave, the order inside staying apply order; with the waves prunes
 * fall in, a wave with nothing to apply included, in wave order.
 */
export function groupByWave(
  steps: readonly Step[],
  prunes: ReadonlyMap<number, KubeObject[]> = new Map(),
): Wave[] {
  const waves: Wave[] = [];
  for (const s of steps) {
    const last = waves.at(-1);
    if (last && last.wave === s.wave) last.steps.push(s);
    else waves.push({ wave: s.wave, steps: [s], prune: [] });
  }
  for (const [wave, objects] of prunes) {
    const found = waves.find((w) => w.wave === wave);
    if (found) found.prune.push(...objects);
    else waves.push({ wave, steps: [], prune: [...objects] });
  }
  return waves.sort((a, b) => a.wave - b.wave);
}
