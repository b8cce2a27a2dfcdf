import { type Assignment, type KubeObject, type ResourceResult, groupOf } from '@flotilla/contract';
import {
  type ProjectObjectRef,
  checkAgentNamespaces,
  checkObject,
  scopeFromManifests,
} from '@flotilla/fleet-config';
import { type KubeClient } from '../kube/kube-client.js';
import { namespaceToCreate } from './create-namespace.js';

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
  return refusals(kube, assignment, manifests, (ref) => checkObject(project, ref)?.message ?? null);
}

/**
 * A namespace-scoped agent's own limit (FLOTILLA_NAMESPACES), checked before anything is applied:
 * one `failed` result per cluster-scoped object (the Namespace CreateNamespace=true would make
 * included) or object in another namespace; empty for an agent with cluster-wide rights.
 */
export async function namespaceLimitRefusals(
  kube: KubeClient,
  assignment: Assignment,
  manifests: readonly KubeObject[],
): Promise<ResourceResult[]> {
  const limit = kube.namespaces;
  if (!limit) return [];
  const created = namespaceToCreate(assignment, manifests);
  const all = created ? [created, ...manifests] : manifests;
  return refusals(kube, assignment, all, (ref) => checkAgentNamespaces(limit, ref));
}

/** What a cluster of this agent would refuse, as one summary line (undefined: nothing). */
export function namespaceLimitMessage(
  kube: KubeClient,
  refused: readonly ResourceResult[],
): string | undefined {
  if (refused.length === 0) return undefined;
  return `${refused.length} object(s) outside this agent's namespaces (${(kube.namespaces ?? []).join(', ')})`;
}

async function refusals(
  kube: KubeClient,
  assignment: Assignment,
  manifests: readonly KubeObject[],
  check: (ref: ProjectObjectRef) => string | null,
): Promise<ResourceResult[]> {
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
    const violation = check({
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
        message: violation,
      });
  }
  return refused;
}
