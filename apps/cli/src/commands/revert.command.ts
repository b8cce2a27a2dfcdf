import { type CommandDescription } from '../command.js';
import { join } from 'node:path';
import { parseOptions, type OptionValues } from '../options/parse-options.js';
import { HUB_OUTPUT_FORMATS, parseOutputFormat } from '../options/output-format.js';
import { commitsToRevert, type PlannedTarget } from '@flotilla/plan';
import { stringify } from 'yaml';
import {
  commitOf,
  directory,
  git,
  GitError,
  gitTop,
  materialize,
  readSide,
  repoSpecs,
  Scratch,
} from '../offline/fleet-revision.js';
import { EvaluationError, UsageError } from '../offline/offline-command.js';
import { readClusters } from './generate.command.js';
import { capabilitiesFrom } from './render.command.js';
import { hubFlag } from './hub-command.js';
import { revertAtHub } from './revert-hub.js';

const USAGE = `usage: flotilla revert (--appset A | --target T) --to REV [--fleet DIR] [--path SUBDIR]
                       [--repo URL=DIR]... --clusters FILE [--dry-run] [-o table|json|yaml]
       flotilla revert --hub [URL] (--appset A | --target T) [--to REV] [--reason TEXT]
                       [--token T] [--context NAME] [-o table|json|yaml]

Rollback by revert, in a local checkout: finds the commits since REV (the last revision that was
healthy) that changed what the appset A (or the one target T) renders, and writes one commit on
the current branch reverting them, newest first. Your own credentials push it. Every commit of the
range is rendered with the hub's code, as \`flotilla plan\` does, so a commit that only touches
unrelated files is left alone and a values change that reaches A through its chart is found.

  --appset A        the ApplicationSet whose renders to restore
  --target T        one target (an appset's target name, e.g. web-prod-eu)
  --to REV          the revision to restore (e.g. the revision the target was pinned to)
  --fleet DIR       the checkout holding the fleet repository (default .); HEAD is the current state
  --path SUBDIR     the fleet files are under SUBDIR (as the hub's fleet source path)
  --repo URL=DIR    an application repository the appset names; inside the same checkout it is
                    read at each commit, elsewhere as it is
  --clusters FILE   the cluster inventory (as plan and generate)
  --dry-run         say which commits would be reverted; write nothing
  -o, --output      table (default), json or yaml

The working tree must be clean. A revert that does not apply cleanly is aborted (nothing written)
and exits 1 naming the files. Exit 0 when it reverted (or found nothing to revert), 1 when it could
not, 2 on usage.

At the hub (POST /api/v1/targets/T/revert or /appsets/A/revert): the hub finds the commits in the
target's repository, writes the revert on a new branch, pushes it with the write access it was given
and opens a pull request through the Git host's API; the pin is lifted once the merge makes Git
render the pinned content again.
  --hub [URL]           at the hub (URL default $FLOTILLA_HUB_URL, else the context's)
  --to REV              default: the revision the target (or the appset's targets) is pinned to
  --reason TEXT         said in the pull request and the audit log
  --token T, --context NAME  as for the other hub commands`;

const OPTIONS = {
  appset: { type: 'string' },
  target: { type: 'string' },
  to: { type: 'string' },
  fleet: { type: 'string' },
  path: { type: 'string' },
  repo: { type: 'string', multiple: true },
  clusters: { type: 'string' },
  'kube-version': { type: 'string' },
  'api-versions': { type: 'string' },
  'dry-run': { type: 'boolean' },
  output: { type: 'string', short: 'o', default: 'table' },
  help: { type: 'boolean', short: 'h' },
  hub: { type: 'string' },
  token: { type: 'string' },
  context: { type: 'string' },
  reason: { type: 'string' },
} as const;

export const describe: CommandDescription = { options: OPTIONS };

/** The JSON report: which commits changed the renders, and the revert written. */
export interface RevertReport {
  appSet: string;
  target: string | null;
  to: string;
  head: string;
  /** The commits that changed what is rendered, oldest first. */
  commits: { commit: string; subject: string }[];
  /** The revert commit written; null on --dry-run or when there was nothing to revert. */
  revert: string | null;
  /** Whether what is rendered after the revert equals what REV rendered. */
  restores: boolean | null;
}

export async function run(argv: string[]): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  let output: string = 'table';
  const scratch = new Scratch();
  try {
    const hub = hubFlag(argv);
    let values;
    try {
      values = parseOptions(hub.argv, OPTIONS, { command: 'revert', allowPositionals: false }).values;
    } catch (err) {
      throw new UsageError((err as Error).message);
    }
    output = parseOutputFormat(values.output, HUB_OUTPUT_FORMATS);
    if (hub.given) {
      process.stdout.write(await revertAtHub(values, output));
      return 0;
    }
    for (const flag of ['token', 'context', 'reason'] as const)
      if (values[flag] !== undefined) throw new UsageError(`--${flag} goes with --hub`);
    const report = await revert(values, scratch);
    process.stdout.write(
      output === 'json'
        ? `${JSON.stringify(report)}\n`
        : output === 'yaml'
          ? stringify(report)
          : table(report, values['dry-run'] === true),
    );
    return 0;
  } catch (err) {
    if (err instanceof UsageError) {
      console.error(`flotilla: ${err.withExcerpt}`);
      return 2;
    }
    const message = err instanceof Error ? err.message : String(err);
    if (output === 'json') process.stdout.write(`${JSON.stringify({ error: message })}\n`);
    else if (output === 'yaml') process.stdout.write(stringify({ error: message }));
    else process.stdout.write(`error: ${message}\n`);
    return 1;
  } finally {
    scratch.remove();
  }
}

type Values = OptionValues<typeof OPTIONS>;

async function revert(values: Values, scratch: Scratch): Promise<RevertReport> {
  const appSetName = values.appset;
  const targetName = values.target;
  if ((appSetName === undefined) === (targetName === undefined))
    throw new UsageError(`revert needs one of --appset A or --target T\n${USAGE}`);
  if (values.to === undefined) throw new UsageError('revert needs --to REV (the revision to restore)');
  if (values.clusters === undefined) throw new UsageError('revert needs --clusters FILE');
  const path = values.path ?? '';
  if (path.split('/').includes('..') || path.startsWith('/'))
    throw new UsageError(`--path '${path}' must stay inside the fleet repository`);
  const fleet = directory(values.fleet ?? '.', '--fleet');
  const top = gitTop(fleet);
  if (top === null) throw new UsageError(`--fleet ${fleet} is not inside a Git checkout`);
  const repos = repoSpecs(values.repo ?? [], '--repo');
  const args = { clusters: readClusters(values.clusters), capabilities: capabilitiesFrom(values) };
  const to = commitOf(top, values.to, '--to');
  const head = commitOf(top, 'HEAD', '--fleet (HEAD)');

  const fleetDir = join(fleet, path);
  /** What the appset (or target) renders at a commit: target name → digest, plus the appset itself. */
  const fingerprint = async (commit: string, only: string | null): Promise<Fingerprint> => {
    const side = materialize({ revision: commit, fleetDir, repos }, '--to', scratch);
    const { side: read } = await readSide(
      side,
      commit.slice(0, 12),
      { ...args, ...(only === null ? {} : { appSets: new Set([only]) }) },
      null,
    );
    return {
      targets: read.targets,
      objects: read.objects.map((o) => ({ kind: o.kind, name: o.name, object: o.object })),
    };
  };

  // Which appset: given, or the one whose expansion at HEAD holds the target.
  let appSet = appSetName ?? null;
  if (appSet === null) {
    const now = await fingerprint(head, null);
    const found = now.targets.find((t) => t.name === targetName);
    if (!found) throw new EvaluationError(`no appset at HEAD has a target named ${targetName ?? ''}`);
    appSet = found.appSet;
  }
  const key = (f: Fingerprint): string => fingerprintKey(f, appSet, targetName ?? null);

  let range: string[];
  try {
    git(top, ['merge-base', '--is-ancestor', to, head]);
    range = git(top, ['rev-list', '--reverse', '--no-merges', `${to}..${head}`])
      .split('\n')
      .filter((c) => c !== '');
  } catch (err) {
    if (err instanceof GitError) throw new UsageError(`--to ${values.to} is not an ancestor of HEAD`);
    throw err;
  }

  const commits: RevertReport['commits'] = [];
  const atTo = await fingerprint(to, appSet);
  const atHead = await fingerprint(head, appSet);
  const exists = (f: Fingerprint) => f.objects.some((o) => o.kind === 'ApplicationSet' && o.name === appSet);
  if (!exists(atTo) && !exists(atHead))
    throw new EvaluationError(`there is no ApplicationSet ${appSet} at ${values.to} nor at HEAD`);
  const wanted = key(atTo);
  const changed = await commitsToRevert({
    commits: range,
    wanted,
    atHead: key(atHead),
    fingerprintAt: async (commit) => key(await fingerprint(commit, appSet)),
  });
  for (const commit of changed)
    commits.push({ commit, subject: git(top, ['log', '-1', '--format=%s', commit]) });
  const report: RevertReport = {
    appSet,
    target: targetName ?? null,
    to,
    head,
    commits,
    revert: null,
    restores: commits.length === 0 ? true : null,
  };
  if (commits.length === 0 || values['dry-run'] === true) return report;

  if (git(top, ['status', '--porcelain']) !== '')
    throw new UsageError('the working tree has changes: commit or stash them first (or use --dry-run)');
  const newestFirst = [...commits].reverse().map((c) => c.commit);
  try {
    git(top, ['revert', '--no-commit', ...newestFirst]);
  } catch (err) {
    if (!(err instanceof GitError)) throw err;
    const conflicts = git(top, ['diff', '--name-only', '--diff-filter=U']).split('\n').filter(Boolean);
    try {
      git(top, ['revert', '--abort']);
    } catch {
      // Nothing in progress to abort: the first commit did not even start.
      git(top, ['reset', '--hard', head]);
    }
    throw new EvaluationError(
      `the revert does not apply cleanly${conflicts.length > 0 ? ` (conflicts in ${conflicts.join(', ')})` : `: ${err.message}`}; nothing was written — revert by hand: git revert ${newestFirst.join(' ')}`,
    );
  }
  const what = targetName === undefined ? `appset ${appSet}` : `target ${targetName} (appset ${appSet})`;
  const message = [
    `Revert what changed ${what} since ${to.slice(0, 12)}`,
    '',
    ...commits.map((c) => `Reverts ${c.commit.slice(0, 12)} ${c.subject}`),
    '',
    `Written by flotilla revert --to ${to}.`,
  ].join('\n');
  git(top, ['commit', '--quiet', '--no-verify', '-m', message]);
  report.revert = git(top, ['rev-parse', 'HEAD']);
  report.restores = key(await fingerprint(report.revert, appSet)) === wanted;
  return report;
}

interface Fingerprint {
  targets: readonly PlannedTarget[];
  objects: readonly { kind: string; name: string; object: unknown }[];
}

/** What is compared between commits: the appset as stored, and each of its targets' digests. */
function fingerprintKey(f: Fingerprint, appSet: string, target: string | null): string {
  const targets = f.targets
    .filter((t) => t.appSet === appSet && (target === null || t.name === target))
    .map((t) => `${t.name}=${t.digest}`)
    .sort();
  const document = f.objects.find((o) => o.kind === 'ApplicationSet' && o.name === appSet)?.object ?? null;
  // For one target, only its render counts: an edit to the appset that leaves it alone is not its cause.
  return JSON.stringify(target === null ? { document, targets } : { targets });
}

function table(r: RevertReport, dryRun: boolean): string {
  const what = r.target === null ? `appset ${r.appSet}` : `target ${r.target} (appset ${r.appSet})`;
  if (r.commits.length === 0)
    return `nothing to revert: ${what} renders at HEAD (${r.head.slice(0, 12)}) what it rendered at ${r.to.slice(0, 12)}\n`;
  const lines = [
    `${r.commits.length} commit${r.commits.length === 1 ? '' : 's'} since ${r.to.slice(0, 12)} changed what ${what} renders:`,
    ...r.commits.map((c) => `  ${c.commit.slice(0, 12)} ${c.subject}`),
  ];
  if (dryRun) lines.push('dry run: nothing written');
  else
    lines.push(
      `wrote ${r.revert?.slice(0, 12) ?? '?'} reverting them; ${r.restores ? `${what} renders what it rendered at ${r.to.slice(0, 12)}` : `${what} still differs from ${r.to.slice(0, 12)} (later commits build on the reverted ones): run flotilla plan --base ${r.to.slice(0, 12)} --head HEAD`}. Push it with your own credentials.`,
    );
  return `${lines.join('\n')}\n`;
}
