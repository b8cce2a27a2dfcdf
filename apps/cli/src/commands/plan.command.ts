import { join } from 'node:path';
import { type CommandDescription } from '../command.js';
import { parseOptions } from '../options/parse-options.js';
import { type ClusterInfo } from '@flotilla/generators';
import { type Capabilities } from '@flotilla/manifests';
import {
  DEFAULT_DELETION_GUARD_PERCENT,
  formatPlanMarkdown,
  formatPlanTable,
  planFleetChange,
  planReportSchema,
  type PlanReport,
} from '@flotilla/plan';
import { HubApiError } from '../fleet/hub-client.js';
import { connectHub, describeApiError, hubFlag } from './hub-command.js';
import { stringify } from 'yaml';
import {
  directory,
  materialize,
  readSide,
  repoSpecs,
  Scratch,
  type SideInputs,
} from '../offline/fleet-revision.js';
import { UsageError } from '../offline/offline-command.js';
import { readClusters } from './generate.command.js';
import { capabilitiesFrom } from './render.command.js';

const USAGE = `usage: flotilla plan --base REV [--head REV] [--fleet DIR] [--path SUBDIR] [--repo URL=DIR]...
                     --clusters FILE [--at TIME] [--exit-code] [-o table|json|markdown|yaml]
       flotilla plan --base-dir DIR --head-dir DIR [--base-repo URL=DIR]... [--head-repo URL=DIR]...
                     --clusters FILE ...
       flotilla plan --hub [URL] --base REV --head REV [--fleet-source ID] [--token T] [--context NAME] ...

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
At the hub (POST /api/v1/plan): the same plan with the hub's live inventory (cluster labels, its
ClusterGroups applied), its mirrors of the fleet and application repositories and its settings:
  --hub [URL]           plan at the hub (URL default $FLOTILLA_HUB_URL, else the context's)
  --base REV, --head REV  revisions of the fleet repository the hub follows (a branch, tag or commit;
                        one the hub has not fetched yet is fetched)
  --fleet-source ID     the fleet source (id or repository URL) when the hub follows several
  --token T, --context NAME  as for the other hub commands
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
  hub: { type: 'string' },
  token: { type: 'string' },
  context: { type: 'string' },
  'fleet-source': { type: 'string' },
} as const;

/** What only an offline plan reads: at the hub, its own inventory, mirrors and settings stand for them. */
const OFFLINE_ONLY = [
  'fleet',
  'path',
  'repo',
  'base-dir',
  'head-dir',
  'base-repo',
  'head-repo',
  'clusters',
  'deletion-guard-percent',
  'kube-version',
  'api-versions',
] as const;

export const describe: CommandDescription = { options: OPTIONS };

type PlanFormat = 'table' | 'json' | 'markdown' | 'yaml';

export async function run(argv: string[]): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  let output: PlanFormat = 'table';
  const scratch = new Scratch();
  try {
    const hub = hubFlag(argv);
    const values = parsePlanValues(hub.argv);
    output = formatOf(values.output);
    const args = hub.given ? parseHubPlanArgs(values) : parsePlanArgs(values);
    const report = 'body' in args ? await planAtHub(args) : await plan(args, scratch);
    process.stdout.write(formatReport(report, output, args.diff));
    return args.exitCode && (report.changed || !report.policies.allowed) ? 1 : 0;
  } catch (err) {
    if (err instanceof UsageError) {
      console.error(`flotilla: ${err.withExcerpt}`);
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

type PlanValues = ReturnType<typeof parseOptions<typeof OPTIONS>>['values'];

function parsePlanValues(argv: string[]): PlanValues {
  try {
    return parseOptions(argv, OPTIONS, { command: 'plan', allowPositionals: false }).values;
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}

function formatOf(output: string): PlanFormat {
  if (!isPlanFormat(output))
    throw new UsageError(`-o must be table, json, markdown or yaml, not '${output}'`);
  return output;
}

function parseAt(text: string | undefined): Date {
  const at = text === undefined ? new Date() : new Date(text);
  if (Number.isNaN(at.getTime()) || (text !== undefined && !/^\d{4}-\d\d-\d\dT/.test(text)))
    throw new UsageError(`--at '${text ?? ''}' is not an RFC 3339 time such as 2026-03-01T09:00:00Z`);
  return at;
}

function parsePlanArgs(values: PlanValues): PlanArgs {
  const output = formatOf(values.output);
  for (const flag of ['token', 'context', 'fleet-source'] as const)
    if (values[flag] !== undefined) throw new UsageError(`--${flag} goes with --hub`);
  if (values.clusters === undefined) throw new UsageError(`plan needs --clusters FILE\n${USAGE}`);
  const at = parseAt(values.at);
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

interface HubPlanArgs {
  values: PlanValues;
  body: { fleetSource?: string; base: string; head: string; at?: string };
  output: PlanFormat;
  diff: boolean;
  exitCode: boolean;
}

function parseHubPlanArgs(values: PlanValues): HubPlanArgs {
  const offline = OFFLINE_ONLY.find((flag) => values[flag] !== undefined);
  if (offline !== undefined)
    throw new UsageError(
      `--${offline} is for an offline plan; with --hub the hub plans with its own inventory, mirrors and settings`,
    );
  if (values.base === undefined || values.head === undefined)
    throw new UsageError('--hub needs --base REV and --head REV (revisions of the fleet repository)');
  if (values.at !== undefined) parseAt(values.at);
  return {
    values,
    body: {
      ...(values['fleet-source'] !== undefined && { fleetSource: values['fleet-source'] }),
      base: values.base,
      head: values.head,
      ...(values.at !== undefined && { at: values.at }),
    },
    output: formatOf(values.output),
    diff: values.diff === true,
    exitCode: values['exit-code'] === true,
  };
}

/** The hub's plan (POST /api/v1/plan), checked against the report's schema. */
async function planAtHub(args: HubPlanArgs): Promise<PlanReport> {
  const { client } = connectHub(args.values);
  let answer: unknown;
  try {
    answer = await client.request<unknown>('POST', '/api/v1/plan', args.body);
  } catch (err) {
    if (err instanceof HubApiError) throw new Error(describeApiError(err), { cause: err });
    throw err;
  }
  const report = planReportSchema.safeParse(answer);
  if (!report.success)
    throw new Error(
      `${client.baseUrl} answered something that is not a plan report: ${report.error.message}`,
    );
  return report.data;
}
