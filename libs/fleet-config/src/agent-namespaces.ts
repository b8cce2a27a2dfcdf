import { type ProjectObjectRef } from './project-policy.js';

/**
 * A namespace-scoped agent (FLOTILLA_NAMESPACES) holds a Role in each of its namespaces and no
 * ClusterRole: it can write nothing cluster-scoped and nothing elsewhere. Its own check says so
 * before the cluster is asked, with the reason, rather than letting a half-applied revision end in
 * a 403 from the API server.
 */
export function checkAgentNamespaces(namespaces: readonly string[], obj: ProjectObjectRef): string | null {
  const what = `${obj.group === '' ? '' : `${obj.group}/`}${obj.kind} '${obj.name}'`;
  const limit = `this agent is limited to namespace(s) ${namespaces.join(', ')} (FLOTILLA_NAMESPACES) and has no cluster-wide rights`;
  if (!obj.namespaced) return `${what}: cluster-scoped kind ${obj.kind} refused: ${limit}`;
  const namespace = obj.namespace ?? '';
  if (!namespaces.includes(namespace)) return `${what}: namespace '${namespace}' refused: ${limit}`;
  return null;
}
