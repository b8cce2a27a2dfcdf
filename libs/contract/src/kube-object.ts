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
