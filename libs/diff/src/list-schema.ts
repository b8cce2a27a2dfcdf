import { isPlainObject, scalarText, type PathSegment } from './json-pointer.js';

/**
 * How a list merges under server-side apply (`x-kubernetes-list-type`), which decides whether a diff
 * matches elements by key, as a set, or by position. Kubernetes publishes this in OpenAPI; the
 * lists that matter for drift are few and stable, so they are named here by field, which also
 * covers CRDs that embed a PodSpec (Argo CD's `knownTypeFields` idea) without a schema lookup.
 */
export type ListSchema =
  | { type: 'map'; keys: readonly string[]; keyDefaults: Readonly<Record<string, unknown>> }
  | { type: 'set' }
  | { type: 'atomic' };

const BY_NAME: ListSchema = { type: 'map', keys: ['name'], keyDefaults: {} };
const CONTAINER_LISTS = new Set(['containers', 'initContainers', 'ephemeralContainers']);

/** Lists keyed by field name wherever they appear (PodSpec and Container lists). */
const KEYED_FIELDS: Readonly<Record<string, ListSchema>> = {
  containers: BY_NAME,
  initContainers: BY_NAME,
  ephemeralContainers: BY_NAME,
  volumes: BY_NAME,
  imagePullSecrets: BY_NAME,
  resourceClaims: BY_NAME,
  schedulingGates: BY_NAME,
  env: BY_NAME,
  volumeMounts: { type: 'map', keys: ['mountPath'], keyDefaults: {} },
  volumeDevices: { type: 'map', keys: ['devicePath'], keyDefaults: {} },
  hostAliases: { type: 'map', keys: ['ip'], keyDefaults: {} },
  topologySpreadConstraints: { type: 'map', keys: ['topologyKey', 'whenUnsatisfiable'], keyDefaults: {} },
  conditions: { type: 'map', keys: ['type'], keyDefaults: {} },
  // Mutating/ValidatingWebhookConfiguration `webhooks`.
  webhooks: BY_NAME,
};

function fieldNames(path: readonly PathSegment[]): string[] {
  return path.filter((s): s is string => typeof s === 'string');
}

export function listSchemaOf(kind: string, path: readonly PathSegment[]): ListSchema {
  const last = path[path.length - 1];
  if (typeof last !== 'string') return { type: 'atomic' };
  const names = fieldNames(path);
  if (names.length === 2 && names[0] === 'metadata') {
    if (last === 'finalizers') return { type: 'set' };
    if (last === 'ownerReferences') return { type: 'map', keys: ['uid'], keyDefaults: {} };
  }
  if (last === 'ports') {
    const owner = path[path.length - 3];
    if (typeof owner === 'string' && CONTAINER_LISTS.has(owner)) {
      return { type: 'map', keys: ['containerPort', 'protocol'], keyDefaults: { protocol: 'TCP' } };
    }
    if (kind === 'Service' && names.length === 2 && names[0] === 'spec') {
      return { type: 'map', keys: ['port', 'protocol'], keyDefaults: { protocol: 'TCP' } };
    }
    return { type: 'atomic' };
  }
  return KEYED_FIELDS[last] ?? { type: 'atomic' };
}

/**
 * The merge key of one element of a keyed list (`containerPort`+`protocol`, with the server's
 * defaults filled in), as text; undefined when the element lacks a key field.
 */
export function mergeKeyOf(
  element: unknown,
  schema: Extract<ListSchema, { type: 'map' }>,
): string | undefined {
  if (!isPlainObject(element)) return undefined;
  const values: string[] = [];
  for (const k of schema.keys) {
    const v = scalarText(element[k] ?? schema.keyDefaults[k]);
    if (v === undefined) return undefined;
    values.push(v);
  }
  return JSON.stringify(values);
}

/**
 * Maps and structs that server-side apply owns as one value (`x-kubernetes-map-type: atomic`):
 * a label selector or a key reference is replaced whole, so it is compared whole.
 */
const ATOMIC_FIELDS = new Set([
  'nodeSelector',
  'configMapKeyRef',
  'secretKeyRef',
  'fieldRef',
  'resourceFieldRef',
  'labelSelector',
  'namespaceSelector',
  'podSelector',
]);

export function isAtomicMap(kind: string, path: readonly PathSegment[]): boolean {
  const last = path[path.length - 1];
  if (typeof last !== 'string') return false;
  if (ATOMIC_FIELDS.has(last)) return true;
  // Every workload's `spec.selector` is a LabelSelector; the Service's is an atomic map too.
  return last === 'selector' && path.length === 2 && path[0] === 'spec' && kind !== '';
}

/**
 * String maps compared whole: a selector or node selector with an extra live key selects
 * something else, so that key is drift even though the manifest does not name it. Atomic structs
 * (key references, label selectors) are compared field by field instead: the server re-defaults
 * what they leave out (`resourceFieldRef.divisor`) on every apply.
 */
export function comparesWhole(kind: string, path: readonly PathSegment[]): boolean {
  const last = path[path.length - 1];
  if (last === 'nodeSelector' || last === 'matchLabels') return true;
  return (
    (kind === 'Service' || kind === 'ReplicationController') &&
    path.length === 2 &&
    path[0] === 'spec' &&
    last === 'selector'
  );
}

const QUANTITY_MAPS = new Set(['limits', 'requests', 'hard', 'capacity', 'allocatable', 'overhead']);

/** Where Kubernetes stores `resource.Quantity` values, which it rewrites into canonical form. */
export function isQuantityField(path: readonly PathSegment[]): boolean {
  const last = path[path.length - 1];
  const parent = path[path.length - 2];
  if (last === 'sizeLimit' || (last === 'divisor' && parent === 'resourceFieldRef')) return true;
  return typeof parent === 'string' && QUANTITY_MAPS.has(parent);
}

const INT_OR_STRING = new Set(['targetPort', 'maxSurge', 'maxUnavailable', 'minAvailable']);

/** `IntOrString` fields, where a manifest's `"8080"` and the server's `8080` name the same port. */
export function isIntOrStringField(path: readonly PathSegment[]): boolean {
  const last = path[path.length - 1];
  if (typeof last !== 'string') return false;
  if (INT_OR_STRING.has(last)) return true;
  const parent = path[path.length - 2];
  return last === 'port' && (parent === 'httpGet' || parent === 'tcpSocket');
}
