import { type ResourceType } from '../resources/resource-type.js';

/** How a list is merged and owned (x-kubernetes-list-type). */
export type ListType =
  { type: 'map'; keys: string[]; defaults?: Record<string, unknown> } | { type: 'set' } | { type: 'atomic' };

/**
 * The little of a kind's schema that server-side apply and strategic merge need: list types and
 * atomic structs/maps, looked up by the path of field names from the root (list elements add
 * nothing to that path, as in structured-merge-diff).
 */
export interface FieldSchema {
  list(path: readonly string[]): ListType;
  /** Objects owned and replaced as a single value (label selectors, key refs, atomic maps). */
  atomic(path: readonly string[]): boolean;
  /** Strategic-merge-patch merge key (which may differ from the SSA keys), if the list merges. */
  smpKey(path: readonly string[]): string | undefined;
}

const ATOMIC = { type: 'atomic' } as const;
const CONTAINER_LISTS = new Set(['containers', 'initContainers', 'ephemeralContainers']);
const NAME_KEYED = new Set([...CONTAINER_LISTS, 'volumes', 'imagePullSecrets', 'env']);
const ATOMIC_OBJECTS = new Set([
  'selector',
  'podSelector',
  'namespaceSelector',
  'labelSelector',
  'nodeSelector',
  'configMapKeyRef',
  'secretKeyRef',
  'fieldRef',
  'resourceFieldRef',
  'scaleTargetRef',
]);
const TCP = { protocol: 'TCP' };

function builtinList(kind: string, path: readonly string[]): ListType {
  const last = path[path.length - 1] ?? '';
  const parent = path[path.length - 2] ?? '';
  if (path.length === 2 && path[0] === 'metadata') {
    if (last === 'finalizers') return { type: 'set' };
    if (last === 'ownerReferences') return { type: 'map', keys: ['uid'] };
    return ATOMIC;
  }
  if (last === 'conditions' && path[0] === 'status') return { type: 'map', keys: ['type'] };
  if (NAME_KEYED.has(last)) return { type: 'map', keys: ['name'] };
  if (last === 'volumeMounts') return { type: 'map', keys: ['mountPath'] };
  if (last === 'volumeDevices') return { type: 'map', keys: ['devicePath'] };
  if (last === 'hostAliases') return { type: 'map', keys: ['ip'] };
  if (last === 'topologySpreadConstraints')
    return { type: 'map', keys: ['topologyKey', 'whenUnsatisfiable'] };
  if (last === 'ports' && CONTAINER_LISTS.has(parent))
    return { type: 'map', keys: ['containerPort', 'protocol'], defaults: TCP };
  if (last === 'ports' && kind === 'Service' && path.length === 2)
    return { type: 'map', keys: ['port', 'protocol'], defaults: TCP };
  return ATOMIC;
}

function builtinSmpKey(kind: string, path: readonly string[]): string | undefined {
  const last = path[path.length - 1] ?? '';
  const parent = path[path.length - 2] ?? '';
  if (path.length === 2 && path[0] === 'metadata') {
    if (last === 'finalizers') return 'primitive';
    if (last === 'ownerReferences') return 'uid';
    return undefined;
  }
  if (last === 'conditions') return 'type';
  if (NAME_KEYED.has(last)) return 'name';
  if (last === 'volumeMounts') return 'mountPath';
  if (last === 'volumeDevices') return 'devicePath';
  if (last === 'hostAliases') return 'ip';
  if (last === 'topologySpreadConstraints') return 'topologyKey';
  if (last === 'ports' && CONTAINER_LISTS.has(parent)) return 'containerPort';
  if (last === 'ports' && kind === 'Service' && path.length === 2) return 'port';
  return undefined;
}

export function builtinSchema(kind: string): FieldSchema {
  return {
    list: (path) => builtinList(kind, path),
    atomic: (path) => ATOMIC_OBJECTS.has(path[path.length - 1] ?? '') && path[0] !== 'metadata',
    smpKey: (path) => builtinSmpKey(kind, path),
  };
}

type JsonSchema = Record<string, unknown>;

function child(schema: JsonSchema | undefined, name: string): JsonSchema | undefined {
  if (!schema) return undefined;
  const props = schema['properties'] as Record<string, JsonSchema> | undefined;
  let s = props?.[name];
  if (!s && typeof schema['additionalProperties'] === 'object')
    s = schema['additionalProperties'] as JsonSchema;
  if (s && s['type'] === 'array' && typeof s['items'] === 'object') return s;
  return s;
}

/** Walks a structural schema by field names, stepping through array `items` transparently. */
function at(root: JsonSchema | undefined, path: readonly string[]): JsonSchema | undefined {
  let s = root;
  for (const name of path) {
    if (s && s['type'] === 'array') s = s['items'] as JsonSchema | undefined;
    s = child(s, name);
    if (!s) return undefined;
  }
  return s;
}

/** Schema of a custom resource: list types come from the CRD's x-kubernetes-* markers. */
export function crdSchema(openAPIV3Schema: JsonSchema | undefined): FieldSchema {
  const metadataSchema = builtinSchema('');
  return {
    list: (path) => {
      if (path[0] === 'metadata') return metadataSchema.list(path);
      const s = at(openAPIV3Schema, path);
      const type = s?.['x-kubernetes-list-type'];
      if (type === 'map') {
        const keys = (s?.['x-kubernetes-list-map-keys'] as string[] | undefined) ?? [];
        return { type: 'map', keys };
      }
      if (type === 'set') return { type: 'set' };
      return ATOMIC;
    },
    atomic: (path) => {
      if (path[0] === 'metadata') return false;
      const s = at(openAPIV3Schema, path);
      return s?.['x-kubernetes-map-type'] === 'atomic' || s?.['x-kubernetes-map-type'] === 'granular'
        ? s['x-kubernetes-map-type'] === 'atomic'
        : false;
    },
    smpKey: (path) => (path[0] === 'metadata' ? metadataSchema.smpKey(path) : undefined),
  };
}

export function schemaFor(rt: ResourceType): FieldSchema {
  return rt.custom ? crdSchema(rt.schema) : builtinSchema(rt.kind);
}
