import { type KubeObject } from '@flotilla/contract';

/** In this order: Helm's hook weight counts only without a sync wave, as in Argo CD (any object). */
export const WAVE_ANNOTATIONS = [
  'flotilla.dev/sync-wave',
  'argocd.argoproj.io/sync-wave',
  'helm.sh/hook-weight',
] as const;

/** Helm's install order, which Argo CD uses inside a wave; kinds not listed come after, by name. */
const KIND_ORDER = [
  'Namespace',
  'NetworkPolicy',
  'ResourceQuota',
  'LimitRange',
  'PodSecurityPolicy',
  'PodDisruptionBudget',
  'ServiceAccount',
  'Secret',
  'SecretList',
  'ConfigMap',
  'StorageClass',
  'PersistentVolume',
  'PersistentVolumeClaim',
  'CustomResourceDefinition',
  'ClusterRole',
  'ClusterRoleList',
  'ClusterRoleBinding',
  'ClusterRoleBindingList',
  'Role',
  'RoleList',
  'RoleBinding',
  'RoleBindingList',
  'Service',
  'DaemonSet',
  'Pod',
  'ReplicationController',
  'ReplicaSet',
  'Deployment',
  'HorizontalPodAutoscaler',
  'StatefulSet',
  'Job',
  'CronJob',
  'IngressClass',
  'Ingress',
  'APIService',
];
const kindRank = new Map(KIND_ORDER.map((k, i) => [k, i]));

export class SyncWaveError extends Error {
  readonly code = 'agent-bad-sync-wave';
  constructor(
    readonly path: string,
    readonly value: string,
  ) {
    super(`${path}: sync wave must be a whole number such as -1, 0 or 5, got ${JSON.stringify(value)}`);
    this.name = 'SyncWaveError';
  }
}

/** The object's wave: the flotilla alias wins over Argo CD's annotation, which wins over Helm's; default 0. */
export function syncWaveOf(obj: KubeObject): number {
  const annotations = obj.metadata.annotations ?? {};
  for (const key of WAVE_ANNOTATIONS) {
    const raw = annotations[key];
    if (raw === undefined) continue;
    const text = raw.trim();
    if (!/^[-+]?\d+$/.test(text)) {
      throw new SyncWaveError(`${describe(obj)} metadata.annotations["${key}"]`, raw);
    }
    return Number(text);
  }
  return 0;
}

/**
 * Apply order: Namespaces and CRDs first (everything else may live in or be an instance of them),
 * then by sync wave, then kind, then namespace and name, so the order is total and repeatable.
 * Throws SyncWaveError (naming the object) before anything is applied when a wave is unreadable.
 */
export function orderForApply<T extends KubeObject>(objects: readonly T[]): T[] {
  const keyed = objects.map((obj) => ({ obj, foundation: isFoundation(obj) ? 0 : 1, wave: syncWaveOf(obj) }));
  keyed.sort(
    (a, b) =>
      a.foundation - b.foundation ||
      a.wave - b.wave ||
      compareKinds(a.obj.kind, b.obj.kind) ||
      (a.obj.metadata.namespace ?? '').localeCompare(b.obj.metadata.namespace ?? '') ||
      a.obj.metadata.name.localeCompare(b.obj.metadata.name),
  );
  return keyed.map((k) => k.obj);
}

/** Prune order: the reverse of apply order, so dependants go before what they depend on. */
export function orderForPrune<T extends KubeObject>(objects: readonly T[]): T[] {
  return orderForApply(objects).reverse();
}

/**
 * The wave each object a sync prunes is deleted in (Argo CD): the prune waves are the objects' own
 * sync waves, mirrored — the highest is pruned in the lowest one's slot — so what was created last
 * goes first. An object whose wave cannot be read counts as wave 0: its prune is not refused for it.
 */
export function pruneWaves<T extends KubeObject>(objects: readonly T[]): Map<number, T[]> {
  const waveOf = (o: T): number => {
    try {
      return syncWaveOf(o);
    } catch {
      return 0;
    }
  };
  const waves = [...new Set(objects.map(waveOf))].sort((a, b) => a - b);
  const mirrored = new Map(waves.map((w, i) => [w, waves[waves.length - 1 - i] as number]));
  const out = new Map<number, T[]>();
  for (const o of objects) {
    const wave = mirrored.get(waveOf(o)) as number;
    out.set(wave, [...(out.get(wave) ?? []), o]);
  }
  return out;
}

/** Namespaces and CRDs: applied before anything else, hooks included, as everything may live in or be one of them. */
export function isFoundation(obj: KubeObject): boolean {
  return (
    (obj.kind === 'Namespace' && obj.apiVersion === 'v1') ||
    (obj.kind === 'CustomResourceDefinition' && obj.apiVersion.startsWith('apiextensions.k8s.io/'))
  );
}

function compareKinds(a: string, b: string): number {
  const ra = kindRank.get(a) ?? KIND_ORDER.length;
  const rb = kindRank.get(b) ?? KIND_ORDER.length;
  return ra - rb || a.localeCompare(b);
}

function describe(obj: KubeObject): string {
  const ns = obj.metadata.namespace ? `${obj.metadata.namespace}/` : '';
  return `${obj.kind} ${ns}${obj.metadata.name || (obj.metadata.generateName ?? '')}`;
}
