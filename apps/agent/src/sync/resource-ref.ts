import { type KubeObject, TRACKING_ANNOTATION, groupOf } from '@flotilla/contract';
import { idOf } from '../kube/kube-client.js';
import { type ResourceId } from '../state/state-store.js';

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

/** A manifest's ref for a report; one named by generateName goes by its prefix until it is created. */
export function refOfManifest(obj: KubeObject): ReturnType<typeof refOfId> {
  const ref = refOfId(idOf(obj));
  if (ref.name === '') ref.name = obj.metadata.generateName ?? '';
  return ref;
}

export function describeRef(ref: { group: string; kind: string; namespace?: string; name: string }): string {
  return `${ref.group ? `${ref.group}/` : ''}${ref.kind} ${ref.namespace ? `${ref.namespace}/` : ''}${ref.name}`;
}

/** The target whose tracking annotation a live object carries, if any. */
export function trackedBy(live: KubeObject | undefined): string | undefined {
  return live?.metadata.annotations?.[TRACKING_ANNOTATION] || undefined;
}
