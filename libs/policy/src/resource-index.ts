import { BUILT_IN_CLUSTER_SCOPED } from '@flotilla/contract';

/** A Kubernetes object as read from YAML: only what policies look at is typed. */
export interface KubeObject {
  apiVersion?: unknown;
  kind?: unknown;
  metadata?: { name?: unknown; namespace?: unknown; labels?: unknown } & Record<string, unknown>;
  [field: string]: unknown;
}

/** Which resource an object is, as an admission request names it. */
export interface ResourceInfo {
  group: string;
  version: string;
  kind: string;
  resource: string;
  namespaced: boolean;
}

interface CrdNames {
  plural: string;
  namespaced: boolean;
}

/**
 * Kinds to resources without a cluster: CustomResourceDefinitions in the same input name their
 * plural and scope (so a policy's resourceRules can match a custom kind); other kinds take the
 * API server's own guess (lower case, consonant + `y` → `ies`, `s` → `ses`), which is right for
 * every built-in kind but Endpoints, kept here.
 */
export class ResourceIndex {
  private readonly crds = new Map<string, CrdNames>();

  constructor(objects: readonly unknown[] = []) {
    for (const o of objects) {
      const crd = o as { apiVersion?: unknown; kind?: unknown; spec?: Record<string, unknown> };
      if (crd?.kind !== 'CustomResourceDefinition' || typeof crd.apiVersion !== 'string') continue;
      if (!crd.apiVersion.startsWith('apiextensions.k8s.io/')) continue;
      const spec = crd.spec ?? {};
      const names = (spec['names'] ?? {}) as { kind?: unknown; plural?: unknown };
      if (
        typeof spec['group'] !== 'string' ||
        typeof names.kind !== 'string' ||
        typeof names.plural !== 'string'
      )
        continue;
      this.crds.set(`${spec['group']}/${names.kind}`, {
        plural: names.plural,
        namespaced: spec['scope'] !== 'Cluster',
      });
    }
  }

  describe(apiVersion: string, kind: string): ResourceInfo {
    const slash = apiVersion.indexOf('/');
    const group = slash < 0 ? '' : apiVersion.slice(0, slash);
    const version = slash < 0 ? apiVersion : apiVersion.slice(slash + 1);
    const crd = this.crds.get(`${group}/${kind}`);
    if (crd) return { group, version, kind, resource: crd.plural, namespaced: crd.namespaced };
    const namespaced = !(BUILT_IN_CLUSTER_SCOPED.get(group)?.has(kind) ?? false);
    return { group, version, kind, resource: guessPlural(kind), namespaced };
  }

  /** The scope of a kind by its group and name alone (params lookups know no version). */
  namespaced(apiVersion: string, kind: string): boolean {
    return this.describe(apiVersion, kind).namespaced;
  }
}

function guessPlural(kind: string): string {
  const lower = kind.toLowerCase();
  if (lower === 'endpoints') return lower;
  if (lower.endsWith('s')) return `${lower}es`;
  if (/[^aeiou]y$/.test(lower)) return `${lower.slice(0, -1)}ies`;
  return `${lower}s`;
}
