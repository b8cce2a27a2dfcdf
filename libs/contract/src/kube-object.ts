import { z } from 'zod';

/**
 * The minimum every Kubernetes object carries; everything else passes through untouched. As the
 * apiserver, a name or a generateName is required; with only generateName (a hook whose name the
 * server makes fresh on every run) the name reads as ''.
 */
export const kubeObjectSchema = z.looseObject({
  apiVersion: z.string().min(1),
  kind: z.string().min(1),
  metadata: z
    .looseObject({
      name: z.string().default(''),
      // '' beside a name is what a chart may render: the server ignores it, and so does Flotilla.
      generateName: z.string().optional(),
      namespace: z.string().optional(),
      labels: z.record(z.string(), z.string()).optional(),
      annotations: z.record(z.string(), z.string()).optional(),
    })
    .refine((m) => m.name !== '' || (m.generateName ?? '') !== '', {
      message: 'name or generateName is required',
      path: ['name'],
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

/** A manifest with only generateName is referred to by its prefix: its name is the server's, per run. */
export function refOf(obj: KubeObject): ObjectRef {
  const name = obj.metadata.name || (obj.metadata.generateName ?? '');
  const ref: ObjectRef = { group: groupOf(obj.apiVersion), kind: obj.kind, name };
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
