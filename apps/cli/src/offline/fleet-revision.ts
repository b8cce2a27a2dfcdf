import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve, sep } from 'node:path';
import { formatFleetError, validateFleetDirectory, type FleetFile } from '@flotilla/fleet-config';
import { type ClusterInfo } from '@flotilla/generators';
import { canonicalJson, type Capabilities } from '@flotilla/manifests';
import { relabelCluster, withRawAppSets, type FleetSide, type PlannedTarget } from '@flotilla/plan';
import { normalizeRepoURL } from '../commands/generate.command.js';
import { candidatesOf, environment, renderCandidate, type Candidate } from '../commands/render.command.js';
import { readFleetDirectory } from '../commands/validate.command.js';
import { EvaluationError, UsageError } from './offline-command.js';

/**
 * A fleet at a revision, as the hub would hold it: read from Git (or a checkout), validated, its
 * appsets expanded over the inventory and rendered with the hub's render code. Shared by the
 * commands that compare revisions (`plan`, `revert`).
 */

/** Where one side reads the fleet and each application repository. */
export interface SideInputs {
  revision: string | null;
  fleetDir: string;
  repos: Map<string, string>;
}

export function directory(dir: string, flag: string): string {
  const abs = resolve(dir);
  let ok: boolean;
  try {
    ok = statSync(abs).isDirectory();
  } catch {
    ok = false;
  }
  if (!ok) throw new UsageError(`${flag} ${dir}: not a readable directory`);
  return realpathSync(abs);
}

export function repoSpecs(specs: readonly string[], flag: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const spec of specs) {
    const eq = spec.lastIndexOf('=');
    if (eq <= 0 || eq === spec.length - 1) throw new UsageError(`${flag} '${spec}' is not URL=DIR`);
    out.set(
      normalizeRepoURL(spec.slice(0, eq)),
      directory(spec.slice(eq + 1), `${flag} ${spec.slice(0, eq)}`),
    );
  }
  return out;
}

/** Temporary directories holding the files of Git revisions; removed when the command ends. */
export class Scratch {
  private root: string | null = null;
  private readonly trees = new Map<string, string>();

  /** The files of `commit` of the repository at `top`, written once into a scratch directory. */
  tree(top: string, commit: string): string {
    const key = `${top}\u0000${commit}`;
    const known = this.trees.get(key);
    if (known) return known;
    this.root ??= mkdtempSync(join(tmpdir(), 'flotilla-plan-'));
    const dir = join(this.root, String(this.trees.size));
    mkdirSync(dir);
    // A private index: reading a revision leaves the user's checkout and index untouched.
    const env = { ...process.env, GIT_INDEX_FILE: join(this.root, `${this.trees.size}.index`) };
    git(top, ['read-tree', commit], env);
    git(top, [`--work-tree=${dir}`, 'checkout-index', '--all', '--force'], env);
    this.trees.set(key, dir);
    return dir;
  }

  remove(): void {
    if (this.root) rmSync(this.root, { recursive: true, force: true });
  }
}

export function git(cwd: string, args: string[], env: NodeJS.ProcessEnv = process.env): string {
  const r = spawnSync('git', ['-C', cwd, ...args], { encoding: 'utf8', env, maxBuffer: 64 * 1024 * 1024 });
  if (r.error) throw new UsageError(`cannot run git: ${r.error.message}`);
  if (r.status !== 0) {
    const said = (r.stderr.trim() || r.stdout.trim()).split('\n')[0];
    throw new GitError(said || `git ${args[0] ?? ''} exited ${r.status ?? r.signal ?? '?'}`);
  }
  return r.stdout.trim();
}

export class GitError extends Error {}

/** The top of the Git checkout holding `dir`, or null when it is not in one. */
export function gitTop(dir: string): string | null {
  try {
    return realpathSync(git(dir, ['rev-parse', '--show-toplevel']));
  } catch (err) {
    if (err instanceof GitError) return null;
    throw err;
  }
}

export function commitOf(top: string, revision: string, flag: string): string {
  try {
    return git(top, ['rev-parse', '--verify', '--quiet', `${revision}^{commit}`]);
  } catch (err) {
    if (err instanceof GitError) throw new UsageError(`${flag} ${revision}: no such revision in ${top}`);
    throw err;
  }
}

/** A directory inside a checkout, as it is at `commit`. */
function atRevision(scratch: Scratch, dir: string, top: string, commit: string): string {
  const rel = relative(top, dir);
  return join(scratch.tree(top, commit), ...(rel === '' ? [] : rel.split(sep)));
}

/** Resolves one side's revision: the fleet and every repository in a Git checkout read at it. */
export function materialize(side: SideInputs, flag: string, scratch: Scratch): SideInputs {
  if (side.revision === null) return side;
  const top = gitTop(resolveExisting(side.fleetDir));
  if (top === null)
    throw new UsageError(
      `--fleet ${side.fleetDir} is not inside a Git checkout (give --base-dir/--head-dir for plain directories)`,
    );
  const commit = commitOf(top, side.revision, flag);
  const repos = new Map<string, string>();
  for (const [url, dir] of side.repos) {
    const repoTop = gitTop(dir);
    repos.set(
      url,
      repoTop === null
        ? dir
        : atRevision(scratch, dir, repoTop, commitOf(repoTop, side.revision, `${flag} (in --repo ${url})`)),
    );
  }
  return { revision: commit, fleetDir: atRevision(scratch, side.fleetDir, top, commit), repos };
}

/** `--path` may name a directory the revision has but the working tree does not: ask Git from the nearest one that exists. */
function resolveExisting(dir: string): string {
  let cur = dir;
  for (;;) {
    try {
      if (statSync(cur).isDirectory()) return cur;
    } catch {
      // Not here; one level up.
    }
    const up = resolve(cur, '..');
    if (up === cur) return cur;
    cur = up;
  }
}

export type GroupSpecs = Parameters<typeof relabelCluster>[2];

/**
 * One side as the hub would hold it after applying it: the fleet repository validated (an invalid
 * one is refused as a whole, as the hub refuses it), its appsets stored as written, their targets
 * generated over the inventory (labelled by this side's ClusterGroups) and rendered.
 */
export async function readSide(
  inputs: SideInputs,
  name: string,
  args: {
    clusters: readonly ClusterInfo[];
    capabilities: Capabilities;
    /** Render only these appsets (all when absent). */
    appSets?: ReadonlySet<string>;
  },
  baseGroups: GroupSpecs | null,
): Promise<{ side: FleetSide; groups: GroupSpecs }> {
  const at = `${name}${inputs.revision === null ? '' : ` (${inputs.revision.slice(0, 12)})`}`;
  let files: FleetFile[];
  try {
    files = readFleetDirectory(inputs.fleetDir).files;
  } catch (err) {
    // A revision that lacks the fleet path has no fleet objects (an empty or a new fleet repository).
    if (err instanceof UsageError && inputs.revision !== null) files = [];
    else throw err;
  }
  const validation = validateFleetDirectory(files);
  if (validation.errors.length > 0) {
    const shown = validation.errors.slice(0, 5).map((e) => formatFleetError(e));
    throw new EvaluationError(
      `${at}: the fleet repository is invalid (${validation.errors.length} error${validation.errors.length === 1 ? '' : 's'}; the hub would apply nothing): ${shown.join('; ')}`,
    );
  }
  const objects = withRawAppSets(validation.objects, files);
  const groups = objects.flatMap((o) => (o.kind === 'ClusterGroup' ? [o.object.spec] : []));
  // The inventory holds the labels the base's groups gave; the head's groups move them.
  const clusters = args.clusters.map((c) => ({
    ...c,
    labels: baseGroups === null ? c.labels : relabelCluster(c.name, c.labels, baseGroups, groups),
  }));
  const servers = new Map(clusters.map((c) => [c.name, c.server]));
  const env = environment(inputs.repos);
  const targets: PlannedTarget[] = [];
  const renders = new Map<string, ReturnType<typeof renderCandidate>>();
  const limit = limiter(RENDER_CONCURRENCY);
  for (const o of objects) {
    if (o.kind !== 'ApplicationSet' || (args.appSets && !args.appSets.has(o.name))) continue;
    try {
      const candidates = candidatesOf(o.object, o.file, clusters, undefined, inputs.repos);
      const rendered = await Promise.all(
        candidates.map((c) => {
          const key = renderKey(c, inputs.repos);
          let rendering = renders.get(key);
          if (!rendering) {
            rendering = limit(() => renderCandidate(c, args.capabilities, env));
            renders.set(key, rendering);
          }
          return rendering;
        }),
      );
      candidates.forEach((c, i) => {
        const r = rendered[i] as Awaited<ReturnType<typeof renderCandidate>>;
        const dest = c.spec['destination'] as { namespace?: unknown } | undefined;
        targets.push({
          appSet: o.name,
          name: c.name,
          cluster: c.cluster,
          clusterServer: c.cluster === null ? null : (servers.get(c.cluster) ?? null),
          namespace: typeof dest?.namespace === 'string' ? dest.namespace : '',
          repoURLs: sourceRepos(c.spec),
          digest: r.digest,
          objects: r.objects,
        });
      });
    } catch (err) {
      if (err instanceof UsageError) throw err;
      throw new EvaluationError(`${at}: ApplicationSet ${o.name} (${o.file}): ${(err as Error).message}`);
    }
  }
  duplicates(targets, at);
  return {
    side: {
      revision: inputs.revision,
      objects,
      policies: validation.policies,
      params: validation.params,
      targets,
      clusterLabels: new Map(clusters.map((c) => [c.name, c.labels])),
    },
    groups,
  };
}

/**
 * What a render depends on, as the hub shares renders: the sources, so that targets differing only
 * in generator parameters the sources do not use (1,000 clusters, one directory) share one render.
 * A Helm chart also reads the Application (release name, namespace, project): a source that may be
 * a chart, or several sources, key on those too.
 */
function renderKey(c: Candidate, repos: ReadonlyMap<string, string>): string {
  const spec = c.spec;
  const sources = (Array.isArray(spec['sources']) ? spec['sources'] : [spec['source']]) as unknown[];
  const chart = sources.some((raw) => {
    if (typeof raw !== 'object' || raw === null) return true;
    const source = raw as Record<string, unknown>;
    if (source['chart'] !== undefined || source['helm'] !== undefined) return true;
    const dir =
      typeof source['repoURL'] === 'string' ? repos.get(normalizeRepoURL(source['repoURL'])) : undefined;
    const path = typeof source['path'] === 'string' ? source['path'] : '';
    return dir === undefined || existsSync(join(dir, ...path.split('/'), 'Chart.yaml'));
  });
  const dest = spec['destination'] as { namespace?: unknown } | undefined;
  return canonicalJson({
    sources,
    ...(chart || sources.length > 1
      ? { name: c.name, namespace: dest?.namespace ?? null, project: spec['project'] ?? null }
      : {}),
  });
}

function sourceRepos(spec: Record<string, unknown>): string[] {
  const sources = (Array.isArray(spec['sources']) ? spec['sources'] : [spec['source']]) as unknown[];
  return sources.flatMap((s) => {
    const url = typeof s === 'object' && s !== null ? (s as { repoURL?: unknown }).repoURL : undefined;
    return typeof url === 'string' ? [url] : [];
  });
}

/** Helm and Kustomize renders are processes: a few at once keep both cores busy without flooding them. */
const RENDER_CONCURRENCY = 4;

/** Runs at most `n` of the functions given at once, the others waiting their turn in order. */
function limiter(n: number): <T>(fn: () => Promise<T>) => Promise<T> {
  let active = 0;
  const waiting: (() => void)[] = [];
  return async (fn) => {
    // A finishing call hands its slot to the next waiter, so a newcomer cannot take it in between.
    if (active >= n) await new Promise<void>((resolve) => waiting.push(resolve));
    else active++;
    try {
      return await fn();
    } finally {
      const next = waiting.shift();
      if (next) next();
      else active--;
    }
  };
}

/** The hub refuses an expansion in which two targets share a name; so does the plan. */
function duplicates(targets: readonly PlannedTarget[], at: string): void {
  const seen = new Map<string, string>();
  for (const t of targets) {
    const other = seen.get(t.name);
    if (other !== undefined)
      throw new EvaluationError(
        `${at}: two targets are named ${t.name} (ApplicationSet ${other} and ${t.appSet}); the hub refuses the expansion`,
      );
    seen.set(t.name, t.appSet);
  }
}
