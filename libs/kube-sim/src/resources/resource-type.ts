/** What the simulator knows about one served resource (a built-in kind or a CRD's kind). */
export interface ResourceType {
  group: string;
  version: string;
  kind: string;
  listKind: string;
  /** Plural resource name used in URLs, e.g. `deployments`. */
  plural: string;
  singular: string;
  namespaced: boolean;
  shortNames: string[];
  categories: string[];
  hasStatus: boolean;
  hasScale: boolean;
  /**
   * When `metadata.generation` bumps: never (not tracked), on spec change, on spec or annotation
   * change (Deployment), or on anything but metadata/status (custom resources).
   */
  generation: 'none' | 'spec' | 'specAndAnnotations' | 'custom';
  /** Pods, ServiceAccounts and the like answer DELETE with the object instead of a Status. */
  deleteReturnsObject: boolean;
  /** Served from a CustomResourceDefinition: lists keep item kinds, SMP is refused. */
  custom: boolean;
  /** For custom resources with a scale subresource: JSON paths (`.spec.replicas`). */
  scale?: { specReplicasPath: string; statusReplicasPath: string; labelSelectorPath?: string };
  /** OpenAPI v3 schema of a custom resource (from the CRD), used by explain and list types. */
  schema?: Record<string, unknown>;
  /** Create-only review kinds (access reviews, whoami): answered, never stored. */
  review?: boolean;
}

export function apiVersionOf(rt: Pick<ResourceType, 'group' | 'version'>): string {
  return rt.group ? `${rt.group}/${rt.version}` : rt.version;
}

/** Key of a resource type: `apps/deployments`, `/configmaps` for core. */
export function resourceKey(rt: Pick<ResourceType, 'group' | 'plural'>): string {
  return `${rt.group}/${rt.plural}`;
}

interface BuiltinSpec {
  kind: string;
  plural?: string;
  short?: string[];
  cluster?: boolean;
  status?: boolean;
  scale?: boolean;
  all?: boolean;
  gen?: ResourceType['generation'];
  deleteObject?: boolean;
  review?: boolean;
}

function group(groupName: string, version: string, specs: BuiltinSpec[]): ResourceType[] {
  return specs.map((s) => {
    const singular = s.kind.toLowerCase();
    return {
      group: groupName,
      version,
      kind: s.kind,
      listKind: `${s.kind}List`,
      plural: s.plural ?? `${singular}s`,
      singular,
      namespaced: !s.cluster,
      shortNames: s.short ?? [],
      categories: s.all ? ['all'] : [],
      hasStatus: s.status ?? false,
      hasScale: s.scale ?? false,
      generation: s.gen ?? 'none',
      deleteReturnsObject: s.deleteObject ?? false,
      custom: false,
      ...(s.review ? { review: true } : {}),
    };
  });
}

/** The built-in kinds, in discovery order per group-version (core group first). */
export const BUILTIN_RESOURCES: readonly ResourceType[] = [
  ...group('', 'v1', [
    { kind: 'Namespace', short: ['ns'], cluster: true, status: true },
    { kind: 'ConfigMap', short: ['cm'] },
    { kind: 'Secret' },
    { kind: 'Service', short: ['svc'], status: true, all: true },
    { kind: 'ServiceAccount', short: ['sa'], deleteObject: true },
    { kind: 'Pod', short: ['po'], status: true, all: true, deleteObject: true },
    { kind: 'PersistentVolumeClaim', short: ['pvc'], status: true },
    { kind: 'PersistentVolume', short: ['pv'], cluster: true, status: true },
    { kind: 'Node', short: ['no'], cluster: true, status: true },
    { kind: 'Event', short: ['ev'] },
    { kind: 'Endpoints', plural: 'endpoints', short: ['ep'] },
    { kind: 'LimitRange', short: ['limits'] },
    { kind: 'ResourceQuota', short: ['quota'], status: true },
    { kind: 'ReplicationController', short: ['rc'], status: true, scale: true, all: true, gen: 'spec' },
  ]),
  ...group('apps', 'v1', [
    {
      kind: 'Deployment',
      short: ['deploy'],
      status: true,
      scale: true,
      all: true,
      gen: 'specAndAnnotations',
    },
    { kind: 'ReplicaSet', short: ['rs'], status: true, scale: true, all: true, gen: 'spec' },
    { kind: 'StatefulSet', short: ['sts'], status: true, scale: true, all: true, gen: 'spec' },
    { kind: 'DaemonSet', short: ['ds'], status: true, all: true, gen: 'spec' },
    { kind: 'ControllerRevision' },
  ]),
  ...group('batch', 'v1', [
    { kind: 'Job', status: true, all: true, gen: 'spec' },
    { kind: 'CronJob', short: ['cj'], status: true, all: true, gen: 'spec' },
  ]),
  ...group('autoscaling', 'v2', [
    { kind: 'HorizontalPodAutoscaler', short: ['hpa'], status: true, all: true, gen: 'spec' },
  ]),
  ...group('networking.k8s.io', 'v1', [
    { kind: 'Ingress', plural: 'ingresses', short: ['ing'], status: true, gen: 'spec' },
    { kind: 'NetworkPolicy', plural: 'networkpolicies', short: ['netpol'], gen: 'spec' },
    { kind: 'IngressClass', plural: 'ingressclasses', cluster: true },
  ]),
  ...group('policy', 'v1', [{ kind: 'PodDisruptionBudget', short: ['pdb'], status: true, gen: 'spec' }]),
  ...group('rbac.authorization.k8s.io', 'v1', [
    { kind: 'Role' },
    { kind: 'RoleBinding' },
    { kind: 'ClusterRole', cluster: true },
    { kind: 'ClusterRoleBinding', cluster: true },
  ]),
  ...group('storage.k8s.io', 'v1', [
    { kind: 'StorageClass', short: ['sc'], cluster: true, deleteObject: true },
  ]),
  ...group('coordination.k8s.io', 'v1', [{ kind: 'Lease' }]),
  ...group('authorization.k8s.io', 'v1', [
    { kind: 'SelfSubjectAccessReview', cluster: true, review: true },
    { kind: 'SelfSubjectRulesReview', cluster: true, review: true },
    { kind: 'SubjectAccessReview', cluster: true, review: true },
  ]),
  ...group('authentication.k8s.io', 'v1', [{ kind: 'SelfSubjectReview', cluster: true, review: true }]),
  ...group('apiextensions.k8s.io', 'v1', [
    { kind: 'CustomResourceDefinition', short: ['crd', 'crds'], cluster: true, status: true, gen: 'spec' },
  ]),
];
