import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve, sep } from 'node:path';
import { type FleetFile } from '@flotilla/fleet-config';
import { type ClusterInfo } from '@flotilla/generators';
import { type Capabilities } from '@flotilla/manifests';
import {
  buildFleetSide,
  PlanSideError,
  sharedRenderKey,
  type ClusterGroupSpec,
  type FleetSide,
} from '@flotilla/plan';
import { contextFor, normalizeRepoURL } from '../commands/generate.command.js';
import { environment, renderCandidate } from '../commands/render.command.js';
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

export type GroupSpecs = ClusterGroupSpec[];

/**
 * One side as the hub would hold it after applying it (libs/plan's `buildFleetSide`), read from a
 * checkout: the fleet files of `inputs.fleetDir`, the application repositories of `inputs.repos`.
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
  let files: FleetFile[];
  try {
    files = readFleetDirectory(inputs.fleetDir).files;
  } catch (err) {
    // A revision that lacks the fleet path has no fleet objects (an empty or a new fleet repository).
    if (err instanceof UsageError && inputs.revision !== null) files = [];
    else throw err;
  }
  const env = environment(inputs.repos);
  const opened = contextFor([], inputs.repos);
  try {
    return await buildFleetSide(
      {
        name,
        revision: inputs.revision,
        files,
        clusters: args.clusters,
        // The inventory holds the labels the base's groups gave; the head's groups move them.
        labelledBy: baseGroups,
        ...(args.appSets && { appSets: args.appSets }),
      },
      {
        repository: (repoURL, revision) => opened.repository(repoURL, revision),
        render: (c) => renderCandidate(c, args.capabilities, env),
        renderKey: (c) =>
          sharedRenderKey(c, (repoURL, path) => {
            const dir = inputs.repos.get(normalizeRepoURL(repoURL));
            return dir === undefined || existsSync(join(dir, ...path.split('/'), 'Chart.yaml'));
          }),
      },
    );
  } catch (err) {
    if (!(err instanceof PlanSideError)) throw err;
    if (err.cause instanceof UsageError) throw err.cause;
    throw new EvaluationError(err.message);
  }
}
