import { type Assignment, FIELD_MANAGER, type KubeObject } from '@flotilla/contract';

/** The field manager of the namespaces CreateNamespace=true makes (not `flotilla`: see createNamespace). */
export const NAMESPACE_FIELD_MANAGER = `${FIELD_MANAGER}-namespace`;

/** The Namespace CreateNamespace=true asks for, or undefined when it is off or the bundle declares it. */
export function namespaceToCreate(
  assignment: Assignment,
  manifests: readonly KubeObject[],
): KubeObject | undefined {
  const policy = assignment.syncPolicy;
  const name = assignment.namespace;
  if (!policy.createNamespace || !name) return undefined;
  if (manifests.some((m) => m.apiVersion === 'v1' && m.kind === 'Namespace' && m.metadata.name === name))
    return undefined;
  const metadata: KubeObject['metadata'] = { name };
  const meta = policy.managedNamespaceMetadata;
  if (meta && Object.keys(meta.labels).length > 0) metadata.labels = meta.labels;
  if (meta && Object.keys(meta.annotations).length > 0) metadata.annotations = meta.annotations;
  return { apiVersion: 'v1', kind: 'Namespace', metadata };
}
