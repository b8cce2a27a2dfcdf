import { z } from 'zod';

/** The minimum every Kubernetes object carries; everything else passes through untouched. */
export const kubeObjectSchema = z.looseObject({
  apiVersion: z.string().min(1),
  kind: z.string().min(1),
  metadata: z.looseObject({
    name: z.string().min(1),
    namespace: z.string().optional(),
    labels: z.record(z.string(), z.string()).optional(),
    annotations: z.record(z.string(), z.string()).optional(),
  }),
});
export type KubeObject = z.infer<typeof kubeObjectSchema>;

/** Identifies one object in a cluster; `group` is '' for the core API group. */
export const objectRefSchema = z.object({
  group: z.string(),
  kind: z.string(),
  namespace: z.string().optional(),
  name: z.string(),
});
export type ObjectRef = z.infer<typeof objectRefSchema>;

export function groupOf(apiVersion: string): string {
  const slash = apiVersion.indexOf('/');
  return slash < 0 ? '' : apiVersion.slice(0, slash);
}

export function refOf(obj: KubeObject): ObjectRef {
  const ref: ObjectRef = { group: groupOf(obj.apiVersion), kind: obj.kind, name: obj.metadata.name };
  if (obj.metadata.namespace) ref.namespace = obj.metadata.namespace;
  return ref;
}

/** `group/kind/namespace/name`, stable and readable, used as a map key and in messages. */
export function refKey(ref: ObjectRef): string {
  return `${ref.group}/${ref.kind}/${ref.namespace ?? ''}/${ref.name}`;
}

/**
 * Kubernetes' built-in cluster-scoped kinds, by group. The hub uses it to check a rendered bundle
 * before any agent sees it, and policies to tell a namespaced object from a cluster-scoped one offline;
 * the agent asks its API server (discovery) instead, which also knows CRDs.
 */
export const BUILT_IN_CLUSTER_SCOPED: ReadonlyMap<string, ReadonlySet<string>> = new Map([
  ['', new Set(['Namespace', 'Node', 'PersistentVolume', 'ComponentStatus'])],
  ['rbac.authorization.k8s.io', new Set(['ClusterRole', 'ClusterRoleBinding'])],
  ['apiextensions.k8s.io', new Set(['CustomResourceDefinition'])],
  ['apiregistration.k8s.io', new Set(['APIService'])],
  ['storage.k8s.io', new Set(['StorageClass', 'CSIDriver', 'CSINode', 'VolumeAttachment'])],
  ['scheduling.k8s.io', new Set(['PriorityClass'])],
  ['node.k8s.io', new Set(['RuntimeClass'])],
  ['networking.k8s.io', new Set(['IngressClass'])],
  ['certificates.k8s.io', new Set(['CertificateSigningRequest'])],
  [
    'admissionregistration.k8s.io',
    new Set([
      'MutatingWebhookConfiguration',
      'ValidatingWebhookConfiguration',
      'ValidatingAdmissionPolicy',
      'ValidatingAdmissionPolicyBinding',
    ]),
  ],
]);
