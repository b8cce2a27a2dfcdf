import { type Assignment, type KubeObject, type ResourceResult, groupOf } from '@flotilla/contract';
import { checkObject, scopeFromManifests } from '@flotilla/fleet-config';
import { type KubeClient } from '../kube/kube-client.js';

/**
 * The agent's own check of a bundle against the target's project, before anything is applied: the
 * hub checked the expansion already, but the agent trusts only what it was told to allow. Scope
 * comes from this cluster's discovery (CRDs included), else from the bundle's own CRDs. Returns one
 * `failed` result per object outside the project; empty when all are inside (or unrestricted).
 */
export async function projectRefusals(
  kube: KubeClient,
  assignment: Assignment,
  manifests: readonly KubeObject[],
): Promise<ResourceResult[]> {
  const project = assignment.project;
  if (!project) return [];
  const refused: ResourceResult[] = [];
  for (const m of manifests) {
    const group = groupOf(m.apiVersion);
    let namespaced: boolean | undefined;
    try {
      namespaced = (await kube.scopeOf(m.apiVersion, m.kind)).namespaced;
    } catch {
      const scope = scopeFromManifests(group, m.kind, manifests);
      // A kind neither the cluster nor the bundle knows cannot be applied anyway; its apply reports it.
      if (scope !== undefined) namespaced = scope === 'Namespaced';
    }
    if (namespaced === undefined) continue;
    const namespace = namespaced ? (m.metadata.namespace ?? assignment.namespace) : undefined;
    const violation = checkObject(project, {
      group,
      kind: m.kind,
      name: m.metadata.name,
      namespaced,
      ...(namespace !== undefined && { namespace }),
    });
    if (violation)
      refused.push({
        group,
        kind: m.kind,
        // A hook named by generateName goes by its prefix: it has no name until it is created.
        name: m.metadata.name || (m.metadata.generateName ?? ''),
        ...(namespace !== undefined && { namespace }),
        action: 'failed',
        message: violation.message,
      });
  }
  return refused;
}
