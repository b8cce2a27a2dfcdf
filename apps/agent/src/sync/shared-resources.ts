import { type Assignment, type KubeObject, type ResourceResult } from '@flotilla/contract';
import { type KubeClient, idOf } from '../kube/kube-client.js';
import { prepareObject } from './prepare-object.js';
import { refOfId, trackedBy } from './resource-ref.js';

/**
 * FailOnSharedResource: one `failed` result per declared object that already runs under another
 * target's tracking annotation (Argo CD: "already managed by application …"). A lookup that fails
 * throws: what cannot be checked is not applied.
 */
export async function sharedWithOtherTargets(
  kube: KubeClient,
  assignment: Assignment,
  manifests: readonly KubeObject[],
): Promise<ResourceResult[]> {
  const shared: ResourceResult[] = [];
  for (const m of manifests) {
    let obj: KubeObject;
    try {
      obj = await prepareObject(kube, assignment, m);
    } catch {
      // Not preparable (an unknown kind, a refused option): its apply reports why, nothing is shared.
      continue;
    }
    const owner = trackedBy(await kube.get(idOf(obj)));
    if (owner && owner !== assignment.name)
      shared.push({
        ...refOfId(idOf(obj)),
        action: 'failed',
        message: `already tracked by target ${owner} (FailOnSharedResource=true)`,
      });
  }
  return shared;
}
