/**
 * How a strategic merge patch treats a field of a built-in kind: the `patchMergeKey` and
 * `patchStrategy` tags of the Kubernetes Go types, which kubectl compiles in. `mergeKey`: the list
 * merges element by element on that field (`primitive`: a list of scalars merged as a set); absent,
 * a list is replaced whole. `retainKeys`: a patch of the struct lists the keys it keeps, so a field
 * the server defaulted for another variant (a Deployment's `rollingUpdate` once `type: Recreate`) goes.
 * Named by field, as in list-schema.ts, so CRDs that embed a PodSpec are not affected: custom
 * resources get a JSON merge patch, which has no strategy at all.
 */
export interface PatchStrategy {
  mergeKey?: string;
  retainKeys?: true;
}

const CONTAINER_LISTS = new Set(['containers', 'initContainers', 'ephemeralContainers']);
const BY_NAME = new Set([...CONTAINER_LISTS, 'imagePullSecrets', 'env', 'schedulingGates']);

/** `path`: field names from the root; list elements add nothing (`spec.template.spec.containers.ports`). */
export function patchStrategyOf(kind: string, path: readonly string[]): PatchStrategy {
  const last = path[path.length - 1] ?? '';
  const parent = path[path.length - 2] ?? '';
  if (path.length === 2 && path[0] === 'metadata') {
    if (last === 'finalizers') return { mergeKey: 'primitive' };
    if (last === 'ownerReferences') return { mergeKey: 'uid' };
    return {};
  }
  if (BY_NAME.has(last)) return { mergeKey: 'name' };
  // VolumeSource and PodResourceClaim are one-of structs: `merge,retainKeys`.
  if (last === 'volumes' || last === 'resourceClaims') return { mergeKey: 'name', retainKeys: true };
  if (last === 'volumeMounts') return { mergeKey: 'mountPath' };
  if (last === 'volumeDevices') return { mergeKey: 'devicePath' };
  if (last === 'hostAliases') return { mergeKey: 'ip' };
  if (last === 'topologySpreadConstraints') return { mergeKey: 'topologyKey' };
  if (last === 'conditions') return { mergeKey: 'type' };
  if (last === 'ports' && CONTAINER_LISTS.has(parent)) return { mergeKey: 'containerPort' };
  if (last === 'ports' && kind === 'Service' && path.length === 2) return { mergeKey: 'port' };
  if (last === 'strategy' && kind === 'Deployment' && path.length === 2) return { retainKeys: true };
  return {};
}
