import { globMatch } from '@flotilla/windows';
import { type FleetKind, type FleetObject } from './fleet-object.js';
import { type Issue } from './issue.js';
import { type ClusterGroupObject } from './kinds/cluster-group.js';
import { type ProjectObject } from './kinds/project.js';
import { type SourceVerificationObject } from './kinds/source-verification.js';

/** Every object of the set that has a kind and a name, valid or not: what a reference may point at. */
export type KnownNames = Map<FleetKind, Set<string>>;

/** The project every Argo CD application may use without declaring one. */
export const DEFAULT_PROJECT = 'default';

/**
 * Checks one valid object against the rest of the set: the objects it names exist, and an
 * ApplicationSet stays inside its project's repositories and destinations.
 */
export function checkReferences(
  entry: FleetObject,
  known: KnownNames,
  projects: ReadonlyMap<string, ProjectObject>,
): Issue[] {
  const issues: Issue[] = [];
  const mustExist = (kind: FleetKind, name: string, path: (string | number)[], what: string): void => {
    if (!known.get(kind)?.has(name))
      issues.push({
        code: 'dangling-reference',
        path,
        message: `${what} '${name}' does not exist: no ${kind} of that name in the repository`,
      });
  };
  switch (entry.kind) {
    case 'SyncWindow':
      entry.object.spec.projects.forEach((p, i) =>
        mustExist('Project', p, ['spec', 'projects', i], 'project'),
      );
      break;
    case 'Project':
      entry.object.spec.syncWindows.forEach((w, i) =>
        mustExist('SyncWindow', w, ['spec', 'syncWindows', i], 'sync window'),
      );
      break;
    case 'ApplicationSet': {
      const spec = entry.object.spec;
      if (spec.rolloutStrategy !== undefined)
        mustExist('RolloutStrategy', spec.rolloutStrategy, ['spec', 'rolloutStrategy'], 'rollout strategy');
      const templateProject = stringAt(spec.template.spec, 'project');
      if (spec.project !== undefined && templateProject !== undefined && !isTemplated(templateProject)) {
        if (templateProject !== spec.project)
          issues.push({
            code: 'invalid-field',
            path: ['spec', 'template', 'spec', 'project'],
            message: `project '${templateProject}' differs from spec.project '${spec.project}': give one, or the same`,
          });
      }
      const [project, projectPath] =
        spec.project !== undefined
          ? [spec.project, ['spec', 'project']]
          : [templateProject, ['spec', 'template', 'spec', 'project']];
      if (project === undefined || project === DEFAULT_PROJECT || isTemplated(project)) break;
      const before = issues.length;
      mustExist('Project', project, projectPath, 'project');
      const target = projects.get(project);
      if (issues.length === before && target) issues.push(...checkAgainstProject(entry, project, target));
      break;
    }
    case 'ClusterGroup':
    case 'RolloutStrategy':
    case 'SourceVerification':
      break;
    case 'NotificationPolicy':
      // Its destinations hold secrets, so they are made through the API: the hub checks them when
      // it applies the commit.
      break;
  }
  return issues;
}

function checkAgainstProject(
  entry: Extract<FleetObject, { kind: 'ApplicationSet' }>,
  projectName: string,
  project: ProjectObject,
): Issue[] {
  const issues: Issue[] = [];
  for (const { repoURL, path } of repositoriesOf(entry)) {
    if (!isTemplated(repoURL) && !repoPermitted(project.spec.sourceRepos, repoURL))
      issues.push({
        code: 'repo-not-permitted',
        path,
        message: `repository '${repoURL}' is not permitted by project '${projectName}' (sourceRepos: ${project.spec.sourceRepos.join(', ')})`,
      });
  }
  const destination = entry.object.spec.template.spec?.['destination'];
  if (typeof destination === 'object' && destination !== null) {
    const d = destination as Record<string, unknown>;
    const cluster =
      typeof d['name'] === 'string' ? d['name'] : typeof d['server'] === 'string' ? d['server'] : null;
    const namespace = typeof d['namespace'] === 'string' ? d['namespace'] : null;
    if (cluster !== null && namespace !== null && !isTemplated(cluster) && !isTemplated(namespace)) {
      // A clusterSelector destination depends on cluster labels, which only the hub knows.
      const allowed = project.spec.destinations.some(
        (p) =>
          globMatch(p.namespace, namespace) &&
          (p.clusterSelector !== undefined || (p.cluster !== undefined && globMatch(p.cluster, cluster))),
      );
      if (!allowed)
        issues.push({
          code: 'destination-not-permitted',
          path: ['spec', 'template', 'spec', 'destination'],
          message: `destination cluster '${cluster}', namespace '${namespace}' is not among project '${projectName}' destinations`,
        });
    }
  }
  return issues;
}

/** Argo CD's sourceRepos: permitted when some glob matches and no `!glob` does. */
export function repoPermitted(sourceRepos: readonly string[], repoURL: string): boolean {
  const url = normalizeRepo(repoURL);
  let allowed = false;
  for (const pattern of sourceRepos) {
    if (pattern.startsWith('!')) {
      if (globMatch(normalizeRepo(pattern.slice(1)), url)) return false;
    } else if (globMatch(normalizeRepo(pattern), url)) allowed = true;
  }
  return allowed;
}

// `https://host/Org/repo.git` and `https://host/org/repo` are one repository, as Argo CD normalises them.
function normalizeRepo(url: string): string {
  return url
    .trim()
    .replace(/\/+$/, '')
    .replace(/\.git$/, '')
    .toLowerCase();
}

function repositoriesOf(
  entry: Extract<FleetObject, { kind: 'ApplicationSet' }>,
): { repoURL: string; path: (string | number)[] }[] {
  const out: { repoURL: string; path: (string | number)[] }[] = [];
  const tspec = entry.object.spec.template.spec ?? {};
  const source = tspec['source'];
  const single = stringAt(source, 'repoURL');
  if (single !== undefined)
    out.push({ repoURL: single, path: ['spec', 'template', 'spec', 'source', 'repoURL'] });
  const sources = tspec['sources'];
  if (Array.isArray(sources))
    sources.forEach((s, i) => {
      const url = stringAt(s, 'repoURL');
      if (url !== undefined)
        out.push({ repoURL: url, path: ['spec', 'template', 'spec', 'sources', i, 'repoURL'] });
    });
  collectGitRepos(entry.object.spec.generators, ['spec', 'generators'], out);
  return out;
}

function collectGitRepos(
  generators: unknown[],
  base: (string | number)[],
  out: { repoURL: string; path: (string | number)[] }[],
): void {
  generators.forEach((g, i) => {
    if (typeof g !== 'object' || g === null) return;
    const gen = g as Record<string, unknown>;
    const url = stringAt(gen['git'], 'repoURL');
    if (url !== undefined) out.push({ repoURL: url, path: [...base, i, 'git', 'repoURL'] });
    for (const nested of ['matrix', 'merge']) {
      const children = (gen[nested] as { generators?: unknown } | null | undefined)?.generators;
      if (Array.isArray(children)) collectGitRepos(children, [...base, i, nested, 'generators'], out);
    }
  });
}

function stringAt(value: unknown, key: string): string | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const v = (value as Record<string, unknown>)[key];
  return typeof v === 'string' ? v : undefined;
}

/** A value the generators fill in per target cannot be checked before expansion. */
function isTemplated(value: string): boolean {
  return value.includes('{{');
}

/**
 * Two ClusterGroups that name the same cluster and give one label two values cannot both hold.
 * Only explicit names are compared: which clusters a glob picks is known to the hub alone. The later
 * group (in file order) is reported, pointing at the earlier one.
 */
export function clusterLabelConflicts(
  groups: readonly { name: string; file: string; object: ClusterGroupObject }[],
): Map<string, Issue[]> {
  const setBy = new Map<string, { group: string; file: string; value: string }>();
  const out = new Map<string, Issue[]>();
  for (const g of groups) {
    g.object.spec.clusters.forEach((cluster, i) => {
      for (const [key, value] of Object.entries(g.object.spec.labels)) {
        const id = `${cluster}\u0000${key}`;
        const first = setBy.get(id);
        if (!first) {
          setBy.set(id, { group: g.name, file: g.file, value });
          continue;
        }
        if (first.value === value || first.group === g.name) continue;
        const issues = out.get(g.name) ?? [];
        issues.push({
          code: 'label-conflict',
          path: ['spec', 'clusters', i],
          message: `cluster '${cluster}' gets ${key}=${value} here but ${key}=${first.value} from ClusterGroup '${first.group}' (${first.file})`,
        });
        out.set(g.name, issues);
      }
    });
  }
  return out;
}

/**
 * Two SourceVerification objects for one repository cannot both hold: the later one (in file order)
 * is reported, pointing at the first.
 */
export function repositoryVerificationConflicts(
  objects: readonly { name: string; file: string; object: SourceVerificationObject }[],
): Map<string, Issue[]> {
  const first = new Map<string, { name: string; file: string }>();
  const out = new Map<string, Issue[]>();
  for (const o of objects) {
    const repo = normalizeRepo(o.object.spec.repoURL);
    const earlier = first.get(repo);
    if (!earlier) {
      first.set(repo, o);
      continue;
    }
    out.set(o.name, [
      {
        code: 'duplicate-name',
        path: ['spec', 'repoURL'],
        message: `repository ${o.object.spec.repoURL} is already declared by SourceVerification '${earlier.name}' (${earlier.file})`,
      },
    ]);
  }
  return out;
}
