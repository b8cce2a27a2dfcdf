import {
  type Assignment,
  type KubeObject,
  type ResourceResult,
  resourceSyncOptionsOf,
} from '@flotilla/contract';
import { type KubeClient, type PropagationPolicy, idOf } from '../kube/kube-client.js';
import { type ResourceId } from '../state/state-store.js';
import { keyOf, refOfId, trackedBy } from './resource-ref.js';

/**
 * Adds every key a declared manifest answers to. An object without a namespace may be cluster-scoped
 * or take the target's namespace (only discovery tells), so both keys count as declared.
 */
export function addDeclaredKeys(
  keys: Set<string>,
  manifests: readonly KubeObject[],
  namespace: string,
): void {
  for (const m of manifests) {
    const id = idOf(m);
    keys.add(keyOf(id));
    if (!id.namespace) keys.add(keyOf({ ...id, namespace }));
  }
}

/** Why a sync may not prune in this run; null when it may. One rule for syncs and dry runs. */
export type PruneHold = 'declared-failures' | 'prune-off' | 'empty-revision';

export function pruneHold(o: {
  /** Declared objects that failed: what the agent could not confirm is never a reason to delete. */
  declaredFailures: number;
  prune: boolean;
  declaresNothing: boolean;
  allowEmpty: boolean;
}): PruneHold | null {
  if (o.declaredFailures > 0) return 'declared-failures';
  if (!o.prune) return 'prune-off';
  if (o.declaresNothing && !o.allowEmpty) return 'empty-revision';
  return null;
}

/**
 * The leftovers this target still owns (its tracking annotation): someone else's, or gone, is not
 * ours to delete. A lookup that fails is reported failed and its id kept for tracking.
 */
export async function ownedLeftovers(
  kube: KubeClient,
  assignment: Assignment,
  leftovers: readonly ResourceId[],
  results: ResourceResult[],
): Promise<{ owned: KubeObject[]; keep: ResourceId[] }> {
  const keep: ResourceId[] = [];
  const owned: KubeObject[] = [];
  for (const id of leftovers) {
    try {
      const obj = await kube.get(id);
      if (obj && trackedBy(obj) === assignment.name) owned.push(obj);
    } catch (err) {
      results.push({ ...refOfId(id), action: 'failed', message: (err as Error).message });
      keep.push(id);
    }
  }
  return { owned, keep };
}

/**
 * Splits owned leftovers into those a prune may delete and those it must keep: `Prune=false` on the
 * live object (its last applied annotations) keeps it, reported as left in place, and so does an
 * options annotation that cannot be read — an object is never deleted on a guess.
 */
export function prunable(
  owned: readonly KubeObject[],
  results: ResourceResult[],
): { prune: KubeObject[]; kept: KubeObject[] } {
  const prune: KubeObject[] = [];
  const kept: KubeObject[] = [];
  for (const obj of owned) {
    let message: string | undefined;
    try {
      if (!resourceSyncOptionsOf(obj).prune) message = 'Prune=false: left in place, no longer declared';
    } catch (err) {
      message = `not pruned: ${(err as Error).message}`;
    }
    if (message === undefined) prune.push(obj);
    else {
      kept.push(obj);
      results.push({ ...refOfId(idOf(obj)), action: 'unchanged', message });
    }
  }
  return { prune, kept };
}

/** The API's propagation policy for a prune: the target's PrunePropagationPolicy, foreground unless set. */
export function prunePropagationOf(policy: Assignment['syncPolicy']): PropagationPolicy {
  const chosen = policy.prunePropagationPolicy ?? 'foreground';
  return chosen === 'orphan' ? 'Orphan' : chosen === 'background' ? 'Background' : 'Foreground';
}

/** Said on each pruned object only where its dependents do not simply go with it. */
export const PRUNE_MESSAGE: Readonly<Record<PropagationPolicy, string>> = {
  Foreground: '',
  Background: '',
  Orphan: 'deleted; its dependents were left in place (PrunePropagationPolicy=orphan)',
};
