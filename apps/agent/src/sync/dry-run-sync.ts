import { randomUUID } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import { type Assignment, type KubeObject, type ResourceResult, type SyncReport } from '@flotilla/contract';
import { keepLiveIgnoredFields } from '@flotilla/diff';
import { KubeApiError, type KubeClient, idOf } from '../kube/kube-client.js';
import { type ApplyMode, applyModeOf, WRITE_MESSAGE } from './apply-mode.js';
import { type ResourceId } from '../state/state-store.js';
import { orderForApply } from './apply-order.js';
import { syncRoleOf } from './hooks.js';
import { namespaceLimitMessage, namespaceLimitRefusals, projectRefusals } from './project-check.js';
import { policyRefusals } from './policy-check.js';
import { appliedNothing, applyAs, wroteNothing } from './apply-as.js';
import { NAMESPACE_FIELD_MANAGER, namespaceToCreate } from './create-namespace.js';
import { prepareObject } from './prepare-object.js';
import { addDeclaredKeys, ownedLeftovers, prunable, pruneHold } from './prune-plan.js';
import { keyOf, refOfId } from './resource-ref.js';
import { sharedWithOtherTargets } from './shared-resources.js';

export interface DryRunInput {
  kube: KubeClient;
  assignment: Assignment;
  manifests: readonly KubeObject[];
  /** What the target applied before: what a real sync would prune is found among these. */
  inventory: readonly ResourceId[];
  /** Prune in this run even when the appset does not (the request's `prune`). */
  prune: boolean;
  now?: () => Date;
}

/**
 * What a manual sync would do, asked of the cluster and changing nothing in it: each declared object
 * is sent as its sync would write it (server-side apply, or kubectl's client-side patch with
 * ServerSideApply=false) with dryRun=All (so admission, defaulting and conflicts are the server's own
 * answer) and compared with what runs; what the target tracks and no longer declares
 * is listed as it would be pruned, or left in place when prune is off. Hooks are not run, and waves
 * are not waited for (a dry run makes nothing healthy). The report is a sync run marked `dryRun`:
 * `applied` = would be created or changed (the message says which), `unchanged`, `pruned` = would be
 * pruned, `failed` = the server refused it.
 */
export async function dryRunSync(input: DryRunInput): Promise<SyncReport> {
  const now = input.now ?? (() => new Date());
  const startedAt = now().toISOString();
  const { kube, assignment } = input;
  const report = (outcome: SyncReport['outcome'], messages: string[], resources: ResourceResult[]) => {
    const finishedAt = now().toISOString();
    const r: SyncReport = {
      type: 'sync',
      id: randomUUID(),
      targetId: assignment.targetId,
      at: finishedAt,
      revision: assignment.revision,
      bundleDigest: assignment.bundleDigest,
      trigger: 'manual',
      outcome,
      startedAt,
      finishedAt,
      message: ['dry run: nothing changed', ...messages].join('; '),
      resources,
      dryRun: true,
    };
    return r;
  };

  let ordered: KubeObject[];
  let beyondReach: ResourceResult[];
  let refused: ResourceResult[];
  let denied: ResourceResult[];
  let shared: ResourceResult[] = [];
  try {
    ordered = orderForApply(input.manifests);
    // A revision a sync refuses for its hook annotations (or a generateName on a non-hook), a dry run refuses alike.
    for (const m of ordered) syncRoleOf(m);
    beyondReach = await namespaceLimitRefusals(kube, assignment, input.manifests);
    refused = await projectRefusals(kube, assignment, input.manifests);
    denied = await policyRefusals(kube, assignment, input.manifests);
    if (assignment.syncPolicy.failOnSharedResource)
      shared = await sharedWithOtherTargets(
        kube,
        assignment,
        ordered.filter((m) => syncRoleOf(m).kind === 'resource'),
      );
  } catch (err) {
    return report('Failed', [(err as Error).message], []);
  }
  const limitMessage = namespaceLimitMessage(kube, beyondReach);
  if (limitMessage) return report('Failed', [`${limitMessage}; a sync would apply nothing`], beyondReach);
  if (refused.length > 0)
    return report(
      'Failed',
      [
        `${refused.length} object(s) outside project '${assignment.project?.name ?? ''}'; a sync would apply nothing`,
      ],
      refused,
    );
  if (denied.length > 0)
    return report(
      'Failed',
      [`${denied.length} object(s) denied by admission policies; a sync would apply nothing`],
      denied,
    );
  if (shared.length > 0)
    return report(
      'Failed',
      [
        `${shared.length} object(s) tracked by another target (FailOnSharedResource=true); a sync would apply nothing`,
      ],
      shared,
    );

  const results: ResourceResult[] = [];
  const messages: string[] = [];
  const declared = new Set<string>();
  addDeclaredKeys(declared, ordered, assignment.namespace);
  // A dry run creates no namespace, so the server cannot dry-run what goes into a namespace the
  // same sync would create: those are reported as created without asking.
  const newNamespaces = new Set<string>();
  const ns = namespaceToCreate(assignment, input.manifests);
  if (ns) {
    const ref = refOfId(idOf(ns));
    try {
      const before = await kube.get(idOf(ns));
      if (before) {
        const after = await kube.apply(ns, { dryRun: true, fieldManager: NAMESPACE_FIELD_MANAGER });
        const same = appliedNothing(before, after, ns);
        results.push({
          ...ref,
          action: same ? 'unchanged' : 'applied',
          message: same ? '' : 'would be changed',
        });
      } else {
        newNamespaces.add(ns.metadata.name);
        results.push({ ...ref, action: 'applied', message: 'would be created (CreateNamespace=true)' });
      }
    } catch (err) {
      results.push({ ...ref, action: 'failed', message: (err as Error).message });
    }
  }
  let hooks = 0;
  for (const manifest of ordered) {
    const id = idOf(manifest);
    const role = syncRoleOf(manifest);
    if (role.kind === 'hook') hooks++;
    if (role.kind !== 'resource') continue;
    let obj: KubeObject;
    try {
      obj = await prepareObject(kube, assignment, manifest);
    } catch (err) {
      results.push({ ...refOfId(id), action: 'failed', message: (err as Error).message });
      continue;
    }
    const ref = refOfId(idOf(obj));
    declared.add(keyOf(idOf(obj)));
    try {
      const before = await kube.get(idOf(obj));
      if (!before && obj.metadata.namespace && newNamespaces.has(obj.metadata.namespace)) {
        results.push({ ...ref, action: 'applied', message: 'would be created (its namespace too)' });
        continue;
      }
      const toApply =
        before && assignment.syncPolicy.respectIgnoreDifferences && assignment.ignoreDifferences.length > 0
          ? keepLiveIgnoredFields(obj, before, assignment.ignoreDifferences)
          : obj;
      if (!before && obj.apiVersion === 'v1' && obj.kind === 'Namespace')
        newNamespaces.add(obj.metadata.name);
      results.push({
        ...ref,
        ...(await previewWrite(kube, toApply, before, applyModeOf(obj, assignment.syncPolicy))),
      });
    } catch (err) {
      results.push({ ...ref, action: 'failed', message: (err as Error).message });
    }
  }
  if (hooks > 0) messages.push(`${hooks} hook(s) not run`);

  const leftovers = input.inventory.filter((id) => !declared.has(keyOf(id)));
  const declaredFailures = results.filter((r) => r.action === 'failed').length;
  if (leftovers.length > 0) {
    const hold = pruneHold({
      declaredFailures,
      prune: input.prune || assignment.syncPolicy.prune,
      declaresNothing: input.manifests.length === 0,
      allowEmpty: assignment.syncPolicy.allowEmpty,
    });
    if (hold === 'declared-failures')
      messages.push(`${leftovers.length} object(s) no longer declared; a sync with failures prunes nothing`);
    else if (hold === 'prune-off')
      messages.push(
        `${leftovers.length} object(s) no longer declared; prune is off, they would be left in place`,
      );
    else if (hold === 'empty-revision')
      messages.push(`revision declares no objects: a sync would refuse to prune all ${leftovers.length}`);
    else {
      const { owned } = await ownedLeftovers(kube, assignment, leftovers, results);
      for (const obj of prunable(owned, results).prune)
        results.push({ ...refOfId(idOf(obj)), action: 'pruned', message: 'would be pruned' });
    }
  }
  const failed = results.filter((r) => r.action === 'failed').length;
  if (failed > 0) messages.push(`${failed} of ${results.length} object(s) would fail`);
  const outcome = failed === 0 ? 'Succeeded' : failed === results.length ? 'Failed' : 'Partial';
  return report(outcome, messages, results);
}

/**
 * What writing one object would do, asked of the server with dryRun=All. A re-create (Replace=true
 * with Force=true, or Force=true after a refused apply) cannot be dry-run as a delete and a create;
 * it is said, with the API's refusal when there was one.
 */
async function previewWrite(
  kube: KubeClient,
  obj: KubeObject,
  before: KubeObject | undefined,
  mode: ApplyMode,
): Promise<Pick<ResourceResult, 'action' | 'message'>> {
  const would = (message: string) => ({ action: 'applied' as const, message: `would be ${message}` });
  if (!before) {
    await (mode.write === 'apply' || mode.write === 'client-side-apply'
      ? applyAs(kube, mode, obj, undefined, true)
      : kube.replace(obj, { dryRun: true, validate: mode.validate }));
    return would('created');
  }
  if (mode.write === 'recreate') return would(WRITE_MESSAGE.recreate);
  if (mode.write === 'replace') {
    const after = await kube.replace(obj, { dryRun: true, validate: mode.validate });
    return sameContent(before, after) ? { action: 'unchanged', message: '' } : would(WRITE_MESSAGE.replace);
  }
  try {
    const after = await applyAs(kube, mode, obj, before, true);
    return wroteNothing(mode, before, after, obj) ? { action: 'unchanged', message: '' } : would('changed');
  } catch (err) {
    if (!(mode.recreateWhenRefused && err instanceof KubeApiError && err.status === 422)) throw err;
    return would(WRITE_MESSAGE.refused(err.message));
  }
}

/** The same object apart from what the server moves on every write. */
function sameContent(a: KubeObject, b: KubeObject): boolean {
  const strip = (o: KubeObject): unknown => {
    const {
      resourceVersion: _rv,
      managedFields: _mf,
      generation: _g,
      ...metadata
    } = o.metadata as Record<string, unknown>;
    return { ...o, metadata };
  };
  return isDeepStrictEqual(strip(a), strip(b));
}
