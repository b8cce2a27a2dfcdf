import { randomUUID } from 'node:crypto';
import {
  type Assignment,
  type KubeObject,
  type ResourceResult,
  type SyncOutcome,
  type SyncReport,
  type SyncTrigger,
  TRACKING_ANNOTATION,
  groupOf,
} from '@flotilla/contract';
import { type KubeClient, idOf } from '../kube/kube-client.js';
import { type ResourceId } from '../state/state-store.js';
import { orderForApply, orderForPrune } from './apply-order.js';

/** `group/kind/namespace/name` of a resource id (the same key as the contract's `refKey`). */
export function keyOf(id: ResourceId): string {
  return `${groupOf(id.apiVersion)}/${id.kind}/${id.namespace ?? ''}/${id.name}`;
}

export function refOfId(id: ResourceId): { group: string; kind: string; namespace?: string; name: string } {
  const ref: { group: string; kind: string; namespace?: string; name: string } = {
    group: groupOf(id.apiVersion),
    kind: id.kind,
    name: id.name,
  };
  if (id.namespace) ref.namespace = id.namespace;
  return ref;
}

/**
 * The object as the agent will apply it: a copy with the target's default namespace when the kind
 * is namespaced and none is given, no namespace when the kind is cluster-scoped, and the tracking
 * annotation naming the target.
 */
export async function prepareObject(
  kube: KubeClient,
  assignment: Assignment,
  manifest: KubeObject,
): Promise<KubeObject> {
  const obj = structuredClone(manifest);
  const scope = await kube.scopeOf(obj.apiVersion, obj.kind);
  if (scope.namespaced) obj.metadata.namespace ??= assignment.namespace;
  else delete obj.metadata.namespace;
  obj.metadata.annotations = { ...obj.metadata.annotations, [TRACKING_ANNOTATION]: assignment.name };
  // The server owns these; sending them in an apply is an error or a silent no-op.
  const meta = obj.metadata as Record<string, unknown>;
  for (const f of ['resourceVersion', 'uid', 'creationTimestamp', 'managedFields', 'generation'])
    delete meta[f];
  delete (obj as Record<string, unknown>)['status'];
  return obj;
}

export interface SyncInput {
  kube: KubeClient;
  assignment: Assignment;
  manifests: readonly KubeObject[];
  /** What the target applied before (for prune), in apply order. */
  inventory: readonly ResourceId[];
  trigger: SyncTrigger;
  /** Self-heal: re-apply only these object keys, prune nothing. */
  only?: ReadonlySet<string>;
  breakGlassId?: string;
  now?: () => Date;
}

export interface SyncResult {
  report: SyncReport;
  /** The objects as applied (prepared), in apply order. */
  desired: KubeObject[];
  /** The live objects the API returned from each successful apply, by key. */
  live: Map<string, KubeObject>;
  inventory: ResourceId[];
}

/**
 * One sync run: server-side apply every declared object in order, then prune what the target
 * tracks and no longer declares (reverse order, only objects still carrying this target's tracking
 * annotation). Never throws for a cluster error: each object's outcome is in the report.
 */
export async function syncTarget(input: SyncInput): Promise<SyncResult> {
  const { kube, assignment } = input;
  const now = input.now ?? (() => new Date());
  const startedAt = now().toISOString();
  const results: ResourceResult[] = [];
  const desired: KubeObject[] = [];
  const live = new Map<string, KubeObject>();
  const messages: string[] = [];
  if (input.breakGlassId) messages.push(`outside sync windows under break-glass ${input.breakGlassId}`);

  let ordered: KubeObject[];
  try {
    ordered = orderForApply(input.manifests);
  } catch (err) {
    // Bad input changes nothing: refuse the whole revision before touching the cluster.
    return {
      report: makeReport(input, startedAt, now().toISOString(), 'Failed', (err as Error).message, []),
      desired: [],
      live,
      inventory: [...input.inventory],
    };
  }

  for (const manifest of ordered) {
    let obj: KubeObject;
    try {
      obj = await prepareObject(kube, assignment, manifest);
    } catch (err) {
      results.push({ ...refOfId(idOf(manifest)), action: 'failed', message: (err as Error).message });
      continue;
    }
    desired.push(obj);
    const id = idOf(obj);
    const key = keyOf(id);
    if (input.only && !input.only.has(key)) continue;
    try {
      const before = await kube.get(id);
      const after = await kube.apply(obj);
      live.set(key, after);
      const unchanged =
        before !== undefined && before.metadata['resourceVersion'] === after.metadata['resourceVersion'];
      results.push({ ...refOfId(id), action: unchanged ? 'unchanged' : 'applied', message: '' });
    } catch (err) {
      results.push({ ...refOfId(id), action: 'failed', message: (err as Error).message });
    }
  }

  const desiredKeys = new Set(desired.map((d) => keyOf(idOf(d))));
  const inventory: ResourceId[] = desired.map(idOf);
  // Objects whose manifest could not even be prepared are still declared: never prune them.
  for (const m of input.manifests) desiredKeys.add(keyOf(idOf(m)));
  const leftovers = input.inventory.filter((id) => !desiredKeys.has(keyOf(id)));

  if (input.only) {
    // A heal touches only drifted objects; what the target tracked before stays tracked.
    inventory.push(...leftovers);
  } else if (leftovers.length > 0) {
    if (!assignment.syncPolicy.prune) {
      inventory.push(...leftovers);
      messages.push(`${leftovers.length} object(s) no longer declared; prune is off, left in place`);
    } else if (input.manifests.length === 0 && !assignment.syncPolicy.allowEmpty) {
      inventory.push(...leftovers);
      messages.push(
        `revision declares no objects: refusing to prune all ${leftovers.length} (set syncPolicy.allowEmpty to allow it)`,
      );
    } else {
      inventory.push(...(await prune(kube, assignment, leftovers, results)));
    }
  }

  const failed = results.filter((r) => r.action === 'failed').length;
  const outcome: SyncOutcome = failed === 0 ? 'Succeeded' : failed === results.length ? 'Failed' : 'Partial';
  if (failed > 0) messages.push(`${failed} of ${results.length} object(s) failed`);
  return {
    report: makeReport(input, startedAt, now().toISOString(), outcome, messages.join('; '), results),
    desired,
    live,
    inventory,
  };
}

/** Deletes leftovers still owned by this target; returns the ids it must keep tracking (failures). */
async function prune(
  kube: KubeClient,
  assignment: Assignment,
  leftovers: readonly ResourceId[],
  results: ResourceResult[],
): Promise<ResourceId[]> {
  const keep: ResourceId[] = [];
  const owned: KubeObject[] = [];
  for (const id of leftovers) {
    try {
      const obj = await kube.get(id);
      // Someone else took it over (or it is gone): not ours to delete any more.
      if (obj?.metadata.annotations?.[TRACKING_ANNOTATION] === assignment.name) owned.push(obj);
    } catch (err) {
      results.push({ ...refOfId(id), action: 'failed', message: (err as Error).message });
      keep.push(id);
    }
  }
  let ordered: KubeObject[];
  try {
    ordered = orderForPrune(owned);
  } catch {
    ordered = [...owned].reverse();
  }
  for (const obj of ordered) {
    const id = idOf(obj);
    try {
      await kube.delete(id);
      results.push({ ...refOfId(id), action: 'pruned', message: '' });
    } catch (err) {
      results.push({ ...refOfId(id), action: 'failed', message: (err as Error).message });
      keep.push(id);
    }
  }
  return keep;
}

function makeReport(
  input: SyncInput,
  startedAt: string,
  finishedAt: string,
  outcome: SyncOutcome,
  message: string,
  resources: ResourceResult[],
): SyncReport {
  return {
    type: 'sync',
    id: randomUUID(),
    targetId: input.assignment.targetId,
    at: finishedAt,
    revision: input.assignment.revision,
    bundleDigest: input.assignment.bundleDigest,
    trigger: input.trigger,
    outcome,
    startedAt,
    finishedAt,
    message,
    resources,
  };
}
