import { BUILT_IN_CLUSTER_SCOPED, type GroupKindPattern, type ProjectRestrictions } from '@flotilla/contract';
import { compileSelector } from '@flotilla/labels';
import { globMatch } from '@flotilla/windows';
import { DEFAULT_PROJECT, repoPermitted } from './check-references.js';
import { type ProjectObject } from './kinds/project.js';

/** A project's rules as the hub stores them (the `spec` of a Project object, defaults applied). */
export type ProjectSpec = ProjectObject['spec'];

/** What Argo CD's `default` project allows: any repository, any destination, any kind. */
export const UNRESTRICTED_PROJECT: ProjectSpec = {
  sourceRepos: ['*'],
  destinations: [{ cluster: '*', namespace: '*' }],
  clusterResourceWhitelist: [{ group: '*', kind: '*' }],
  clusterResourceBlacklist: [],
  namespaceResourceBlacklist: [],
  syncWindows: [],
};

/** A cluster as projects see it: its name and labels. */
export interface ProjectCluster {
  name: string;
  labels: Readonly<Record<string, string>>;
}

/** One object of a bundle as the project check sees it; `namespace` is where it will land. */
export interface ProjectObjectRef {
  group: string;
  kind: string;
  name: string;
  namespaced: boolean;
  namespace?: string;
}

/** A refusal: which rule of which project, and a sentence naming the offending thing. */
export interface ProjectViolation {
  code: 'repo-not-permitted' | 'destination-not-permitted' | 'kind-not-permitted';
  message: string;
}

/** True when some pattern of the list matches the group and kind (both globs, Argo CD style). */
export function groupKindListed(list: readonly GroupKindPattern[], group: string, kind: string): boolean {
  return list.some((p) => globMatch(p.group, group) && globMatch(p.kind, kind));
}

/** The repository check of a project; null when permitted. */
export function checkRepository(
  projectName: string,
  project: ProjectSpec,
  repoURL: string,
): ProjectViolation | null {
  if (repoPermitted(project.sourceRepos, repoURL)) return null;
  return {
    code: 'repo-not-permitted',
    message: `repository '${repoURL}' is not permitted by project '${projectName}' (sourceRepos: ${project.sourceRepos.join(', ')})`,
  };
}

/** Does this destination rule pick the cluster (by name glob or by labels)? */
function destinationPicks(d: ProjectSpec['destinations'][number], cluster: ProjectCluster): boolean {
  if (d.cluster !== undefined) return globMatch(d.cluster, cluster.name);
  if (d.clusterSelector !== undefined)
    return compileSelector(d.clusterSelector, 'clusterSelector')({ ...cluster.labels });
  return false;
}

/** The destination check of a project: some rule picks the cluster and allows the namespace. */
export function checkDestination(
  projectName: string,
  project: ProjectSpec,
  cluster: ProjectCluster,
  namespace: string,
): ProjectViolation | null {
  if (project.destinations.some((d) => destinationPicks(d, cluster) && globMatch(d.namespace, namespace)))
    return null;
  return {
    code: 'destination-not-permitted',
    message: `destination cluster '${cluster.name}', namespace '${namespace}' is not among the destinations of project '${projectName}'`,
  };
}

/** The project narrowed to one cluster: what the agent there needs to check objects before applying. */
export function restrictionsFor(
  projectName: string,
  project: ProjectSpec,
  cluster: ProjectCluster,
): ProjectRestrictions {
  const namespaces = [
    ...new Set(project.destinations.filter((d) => destinationPicks(d, cluster)).map((d) => d.namespace)),
  ];
  return {
    name: projectName,
    namespaces,
    clusterResourceWhitelist: project.clusterResourceWhitelist,
    clusterResourceBlacklist: project.clusterResourceBlacklist,
    ...(project.namespaceResourceWhitelist !== undefined && {
      namespaceResourceWhitelist: project.namespaceResourceWhitelist,
    }),
    namespaceResourceBlacklist: project.namespaceResourceBlacklist,
  };
}

/**
 * Whether one object may be created under the restrictions: a cluster-scoped kind must be
 * whitelisted and not blacklisted; a namespaced object must land in an allowed namespace and its
 * kind must pass the namespaced lists. Null when permitted.
 */
export function checkObject(
  restrictions: ProjectRestrictions,
  obj: ProjectObjectRef,
): ProjectViolation | null {
  const what = `${obj.group === '' ? '' : `${obj.group}/`}${obj.kind} '${obj.name}'`;
  const project = `project '${restrictions.name}'`;
  if (!obj.namespaced) {
    if (
      !groupKindListed(restrictions.clusterResourceWhitelist, obj.group, obj.kind) ||
      groupKindListed(restrictions.clusterResourceBlacklist, obj.group, obj.kind)
    )
      return {
        code: 'kind-not-permitted',
        message: `${what}: cluster-scoped kind ${obj.kind} is not permitted by ${project} (clusterResourceWhitelist)`,
      };
    return null;
  }
  const namespace = obj.namespace ?? '';
  if (!restrictions.namespaces.some((glob) => globMatch(glob, namespace)))
    return {
      code: 'destination-not-permitted',
      message: `${what}: namespace '${namespace}' is not among the destinations of ${project} on this cluster`,
    };
  const white = restrictions.namespaceResourceWhitelist;
  if (
    (white !== undefined && !groupKindListed(white, obj.group, obj.kind)) ||
    groupKindListed(restrictions.namespaceResourceBlacklist, obj.group, obj.kind)
  )
    return {
      code: 'kind-not-permitted',
      message: `${what}: kind ${obj.kind} is not permitted by ${project} (namespaceResourceWhitelist/Blacklist)`,
    };
  return null;
}

/**
 * Scope of a kind as far as the manifests alone tell: built-in kinds, and kinds whose
 * CustomResourceDefinition is among `manifests`. Undefined when only the cluster knows.
 */
export function scopeFromManifests(
  group: string,
  kind: string,
  manifests: readonly { apiVersion: string; kind: string; spec?: unknown }[],
): 'Cluster' | 'Namespaced' | undefined {
  if (BUILT_IN_CLUSTER_SCOPED.get(group)?.has(kind)) return 'Cluster';
  for (const m of manifests) {
    if (m.kind !== 'CustomResourceDefinition' || !m.apiVersion.startsWith('apiextensions.k8s.io/')) continue;
    const spec = m.spec as { group?: unknown; names?: { kind?: unknown }; scope?: unknown } | undefined;
    if (spec?.group === group && spec.names?.kind === kind)
      return spec.scope === 'Cluster' ? 'Cluster' : 'Namespaced';
  }
  // Core and well-known groups hold no other cluster-scoped kinds: everything else there is namespaced.
  if (BUILT_IN_CLUSTER_SCOPED.has(group) || ['apps', 'batch', 'autoscaling', 'policy'].includes(group))
    return 'Namespaced';
  return undefined;
}

/**
 * The project an ApplicationSet document belongs to: `spec.project` (Flotilla), else the template's
 * `spec.project` (Argo CD), else `default`. A templated project is refused: the project decides
 * what generation may do, so it cannot depend on what generation produces.
 */
export function projectNameOf(
  document: unknown,
): { name: string; path: string } | { error: string; path: string } {
  const spec = (document as { spec?: { project?: unknown; template?: { spec?: { project?: unknown } } } })
    ?.spec;
  const own = spec?.project;
  const fromTemplate = spec?.template?.spec?.project;
  const [value, path] =
    own !== undefined ? [own, 'spec.project'] : [fromTemplate, 'spec.template.spec.project'];
  if (value === undefined || value === '') return { name: DEFAULT_PROJECT, path: 'spec.project' };
  if (typeof value !== 'string') return { error: 'the project must be a string', path };
  if (value.includes('{{'))
    return { error: `the project must be written literally, not templated ('${value}')`, path };
  if (own !== undefined && typeof fromTemplate === 'string' && fromTemplate !== '' && fromTemplate !== value)
    return {
      error: `spec.template.spec.project '${fromTemplate}' differs from spec.project '${value}': give one, or the same`,
      path: 'spec.template.spec.project',
    };
  return { name: value, path };
}

/**
 * Every repository URL written literally in a document, with the path of its field
 * (`spec.generators[0].git.repoURL`, `spec.template.spec.source.repoURL`); templated ones are skipped.
 */
export function literalRepoFields(document: unknown): { repoURL: string; path: string }[] {
  const out: { repoURL: string; path: string }[] = [];
  const walk = (v: unknown, path: string): void => {
    if (Array.isArray(v)) return v.forEach((item, i) => walk(item, `${path}[${i}]`));
    if (typeof v !== 'object' || v === null) return;
    for (const [key, child] of Object.entries(v)) {
      const at = path === '' ? key : `${path}.${key}`;
      if (key === 'repoURL' && typeof child === 'string' && child !== '' && !child.includes('{{'))
        out.push({ repoURL: child, path: at });
      else walk(child, at);
    }
  };
  walk(document, '');
  return out;
}
