import {
  type Assignment,
  type KubeObject,
  TRACKING_ANNOTATION,
  TRACKING_LABEL,
  TRACKING_LABEL_VALUE,
  resourceSyncOptionsOf,
  SyncOptionError,
} from '@flotilla/contract';
import { type KubeClient } from '../kube/kube-client.js';

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
  try {
    resourceSyncOptionsOf(manifest);
  } catch (err) {
    // The hub refuses these at render; an agent never applies an object whose options it cannot honour.
    if (err instanceof SyncOptionError) throw new Error(`${err.path}: ${err.message}`, { cause: err });
    throw err;
  }
  const obj = structuredClone(manifest);
  const scope = await kube.scopeOf(obj.apiVersion, obj.kind);
  if (scope.namespaced) obj.metadata.namespace ??= assignment.namespace;
  else delete obj.metadata.namespace;
  obj.metadata.annotations = { ...obj.metadata.annotations, [TRACKING_ANNOTATION]: assignment.name };
  obj.metadata.labels = { ...obj.metadata.labels, [TRACKING_LABEL]: TRACKING_LABEL_VALUE };
  // The server owns these; sending them in an apply is an error or a silent no-op.
  const meta = obj.metadata as Record<string, unknown>;
  for (const f of ['resourceVersion', 'uid', 'creationTimestamp', 'managedFields', 'generation'])
    delete meta[f];
  delete (obj as Record<string, unknown>)['status'];
  return obj;
}
