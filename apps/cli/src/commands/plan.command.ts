import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve, sep } from 'node:path';
import { parseArgs } from 'node:util';
import { formatFleetError, validateFleetDirectory, type FleetFile } from '@flotilla/fleet-config';
import { type ClusterInfo } from '@flotilla/generators';
import { canonicalJson, type Capabilities } from '@flotilla/manifests';
import {
  DEFAULT_DELETION_GUARD_PERCENT,
  formatPlanMarkdown,
  formatPlanTable,
  planFleetChange,
  relabelCluster,
  withRawAppSets,
  type FleetSide,
  type PlannedTarget,
  type PlanReport,
} from '@flotilla/plan';
import { stringify } from 'yaml';
import { EvaluationError, UsageError } from '../offline/offline-command.js';
import { normalizeRepoURL, readClusters } from './generate.command.js';
import {
  candidatesOf,
  capabilitiesFrom,
  environment,
  renderCandidate,
  type Candidate,
} from './render.command.js';
import { readFleetDirectory } from './validate.command.js';

const USAGE = `usage: flotilla plan --base REV [--head REV] [--fleet DIR] [--path SUBDIR] [--repo URL=DIR]...
                     --clusters FILE [--at TIME] [--exit-code] [-o table|json|markdown|yaml]
       flotilla plan --base-dir DIR --head-dir DIR [--base-repo URL=DIR]... [--head-repo URL=DIR]...
                     --clusters FILE ...

What merging a change would do to the fleet, computed offline with the hub's own code: targets
added, removed and changed per appset and cluster, a unified diff per object (like kubectl diff),
the rollout step each cluster falls in, the sync windows that would hold it and until when, the
deletion guard's verdicts, the fleet objects (windows, projects, strategies, cluster groups,
policies) that change, and the head's admission policies on what would be applied.

Revisions of one Git repository:
  --base REV            the revision merged onto (e.g. origin/main)
  --head REV            the revision to merge (default HEAD)
  --fleet DIR           the fleet repository: a directory inside a Git checkout (default .)
  --repo URL=DIR        an application repository an appset's sources name; a directory inside a
                        Git checkout is read at --base and at --head (the fleet's own repository
                        too), any other directory as it is on both sides; repeatable
Two checkouts instead:
  --base-dir DIR        the fleet repository as it is before the change
  --head-dir DIR        ... and after it
  --base-repo URL=DIR   an application repository before the change; repeatable
  --head-repo URL=DIR   ... and after it (a --repo URL=DIR serves both sides)
Common:
  --path SUBDIR         the fleet files are under SUBDIR of --fleet (as the hub's fleet source path)
  --clusters FILE       the cluster inventory: [{name, server, labels, annotations}] (as generate)
  --at TIME             when sync windows are evaluated (RFC 3339; default now)
  --deletion-guard-percent N  the hub's DELETION_GUARD_PERCENT (default ${DEFAULT_DELETION_GUARD_PERCENT})
  --kube-version V, --api-versions LIST   what Helm sees as .Capabilities (as render)
  --diff                the table shows each object's diff too
  --exit-code           exit 1 when anything changes or a policy denies an object
  -o, --output          table (default), json (docs/schemas/plan-report.schema.json), markdown (a
                        pull-request comment: summary first, details folded) or yaml

Exit 0 when it could plan (1 with --exit-code and a change or a denial); 1 when planning failed
(an invalid fleet repository, a generator or render error; {"error": …} with -o json); 2 on usage
or unreadable input.`;

const OPTIONS = {
  base: { type: 'string' },
  head: { type: 'string' },
  fleet: { type: 'string' },
  path: { type: 'string' },
  repo: { type: 'string', multiple: true },
  'base-dir': { type: 'string' },
  'head-dir': { type: 'string' },
  'base-repo': { type: 'string', multiple: true },
  'head-repo': { type: 'string', multiple: true },
  clusters: { type: 'string' },
  at: { type: 'string' },
  'deletion-guard-percent': { type: 'string' },
  'kube-version': { type: 'string' },
  'api-versions': { type: 'string' },
  diff: { type: 'boolean' },
  'exit-code': { type: 'boolean' },
  output: { type: 'string', short: 'o', default: 'table' },
  help: { type: 'boolean', short: 'h' },
} as const;

type PlanFormat = 'table' | 'json' | 'markdown' | 'yaml';

export async function run(argv: string[]): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    console.log(USAGE);
    return 0;
  }
  let output: PlanFormat = 'table';
  const scratch = new Scratch();
  try {
    const args = parsePlanArgs(argv);
    output = args.output;
    const report = await plan(args, scratch);
    process.stdout.write(formatReport(report, output, args.diff));
    return args.exitCode && (report.changed || !report.policies.allowed) ? 1 : 0;
  } catch (err) {
    if (err instanceof UsageError) {
      console.error(`flotilla: ${err.message}`);
      return 2;
    }
    const message = err instanceof Error ? err.message : String(err);
    if (output === 'json') process.stdout.write(`${JSON.stringify({ error: message })}\n`);
    else if (output === 'yaml') process.stdout.write(stringify({ error: message }));
    else if (output === 'markdown') process.stdout.write(`### Flotilla plan failed\n\n${message}\n`);
    else process.stdout.write(`error: ${message}\n`);
    return 1;
  } finally {
    scratch.remove();
  }
}

function formatReport(report: PlanReport, output: PlanFormat, diffs: boolean): string {
  switch (output) {
    case 'json':
      return `${JSON.stringify(report)}\n`;
    case 'yaml':
      return stringify(report);
    case 'markdown':
      return formatPlanMarkdown(report);
    case 'table':
      return formatPlanTable(report, { diffs });
  }
}

/** Where one side reads the fleet and each application repository. */
interface SideInputs {
  revision: string | null;
  fleetDir: string;
  repos: Map<string, string>;
}

interface PlanArgs {
  base: SideInputs;
  head: SideInputs;
  clusters: ClusterInfo[];
  at: Date;
  deletionGuardPercent: number;
  capabilities: Capabilities;
  output: PlanFormat;
  diff: boolean;
  exitCode: boolean;
}

function parsePlanArgs(argv: string[]): PlanArgs {
  let values;
  try {
    values = parseArgs({ args: argv, options: OPTIONS, strict: true, allowPositionals: false }).values;
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  const output = values.output;
  if (!isPlanFormat(output))
    throw new UsageError(`-o must be table, json, markdown or yaml, not '${output}'`);
  if (values.clusters === undefined) throw new UsageError(`plan needs --clusters FILE\n${USAGE}`);
  const at = values.at === undefined ? new Date() : new Date(values.at);
  if (Number.isNaN(at.getTime()) || (values.at !== undefined && !/^\d{4}-\d\d-\d\dT/.test(values.at)))
    throw new UsageError(`--at '${values.at ?? ''}' is not an RFC 3339 time such as 2026-03-01T09:00:00Z`);
  const percentText = values['deletion-guard-percent'];
  const deletionGuardPercent =
    percentText === undefined ? DEFAULT_DELETION_GUARD_PERCENT : Number(percentText);
  if (!Number.isFinite(deletionGuardPercent) || deletionGuardPercent < 0 || deletionGuardPercent > 100)
    throw new UsageError(`--deletion-guard-percent '${percentText ?? ''}' is not a number from 0 to 100`);
  const capabilities = capabilitiesFrom(values);
  const clusters = readClusters(values.clusters);
  const shared = repoSpecs(values.repo ?? [], '--repo');
  const git = values.base !== undefined || values.head !== undefined;
  const dirs = values['base-dir'] !== undefined || values['head-dir'] !== undefined;
  if (git && dirs)
    throw new UsageError('give either --base/--head (Git revisions) or --base-dir/--head-dir, not both');
  if (!git && !dirs)
    throw new UsageError(`plan needs --base REV (and --head REV), or --base-dir and --head-dir\n${USAGE}`);
  const common = {
    clusters,
    at,
    deletionGuardPercent,
    capabilities,
    output,
    diff: values.diff === true,
    exitCode: values['exit-code'] === true,
  };
  const path = values.path ?? '';
  if (path.split('/').includes('..') || path.startsWith('/'))
    throw new UsageError(`--path '${path}' must stay inside the fleet repository`);
  if (dirs) {
    if (values.fleet !== undefined)
      throw new UsageError(
        '--fleet goes with --base/--head; with two checkouts give --base-dir and --head-dir',
      );
    const baseDir = values['base-dir'];
    const headDir = values['head-dir'];
    if (baseDir === undefined || headDir === undefined)
      throw new UsageError('--base-dir and --head-dir go together');
    return {
      ...common,
      base: {
        revision: null,
        fleetDir: join(directory(baseDir, '--base-dir'), path),
        repos: new Map([...shared, ...repoSpecs(values['base-repo'] ?? [], '--base-repo')]),
      },
      head: {
        revision: null,
        fleetDir: join(directory(headDir, '--head-dir'), path),
        repos: new Map([...shared, ...repoSpecs(values['head-repo'] ?? [], '--head-repo')]),
      },
    };
  }
  if (values['base-repo'] !== undefined || values['head-repo'] !== undefined)
    throw new UsageError(
      '--base-repo and --head-repo go with --base-dir/--head-dir; with revisions give --repo URL=DIR',
    );
  if (values.base === undefined) throw new UsageError('--head needs --base REV (the revision merged onto)');
  const fleet = directory(values.fleet ?? '.', '--fleet');
  // Revisions are resolved in runPlan, once a scratch directory holds their files.
  return {
    ...common,
    base: { revision: values.base, fleetDir: join(fleet, path), repos: shared },
    head: { revision: values.head ?? 'HEAD', fleetDir: join(fleet, path), repos: shared },
  };
}

function isPlanFormat(v: string): v is PlanFormat {
  return v === 'table' || v === 'json' || v === 'markdown' || v === 'yaml';
}

function directory(dir: string, flag: string): string {
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

function repoSpecs(specs: readonly string[], flag: string): Map<string, string> {
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
class Scratch {
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

function git(cwd: string, args: string[], env: NodeJS.ProcessEnv = process.env): string {
  const r = spawnSync('git', ['-C', cwd, ...args], { encoding: 'utf8', env, maxBuffer: 64 * 1024 * 1024 });
  if (r.error) throw new UsageError(`cannot run git: ${r.error.message}`);
  if (r.status !== 0) throw new GitError(r.stderr.trim().split('\n')[0] ?? `git ${args[0] ?? ''} failed`);
  return r.stdout.trim();
}

class GitError extends Error {}

/** The top of the Git checkout holding `dir`, or null when it is not in one. */
function gitTop(dir: string): string | null {
  try {
    return realpathSync(git(dir, ['rev-parse', '--show-toplevel']));
  } catch (err) {
    if (err instanceof GitError) return null;
    throw err;
  }
}

function commitOf(top: string, revision: string, flag: string): string {
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
function materialize(side: SideInputs, flag: string, scratch: Scratch): SideInputs {
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

async function plan(args: PlanArgs, scratch: Scratch): Promise<PlanReport> {
  const base = materialize(args.base, '--base', scratch);
  const head = materialize(args.head, '--head', scratch);
  const baseSide = await readSide(base, 'base', args, null);
  const headSide = await readSide(head, 'head', args, baseSide.groups);
  return planFleetChange(baseSide.side, headSide.side, {
    at: args.at,
    deletionGuardPercent: args.deletionGuardPercent,
  });
}

type GroupSpecs = Parameters<typeof relabelCluster>[2];

/**
 * One side as the hub would hold it after applying it: the fleet repository validated (an invalid
 * one is refused as a whole, as the hub refuses it), its appsets stored as written, their targets
 * generated over the inventory (labelled by this side's ClusterGroups) and rendered.
 */
async function readSide(
  inputs: SideInputs,
  name: 'base' | 'head',
  args: PlanArgs,
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
  for (const o of objects) {
    if (o.kind !== 'ApplicationSet') continue;
    try {
      for (const c of candidatesOf(o.object, o.file, clusters, undefined, inputs.repos)) {
        const key = renderKey(c, inputs.repos);
        let rendering = renders.get(key);
        if (!rendering) {
          rendering = renderCandidate(c, args.capabilities, env);
          renders.set(key, rendering);
        }
        const rendered = await rendering;
        const dest = c.spec['destination'] as { namespace?: unknown } | undefined;
        targets.push({
          appSet: o.name,
          name: c.name,
          cluster: c.cluster,
          clusterServer: c.cluster === null ? null : (servers.get(c.cluster) ?? null),
          namespace: typeof dest?.namespace === 'string' ? dest.namespace : '',
          digest: rendered.digest,
          objects: rendered.objects,
        });
      }
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
