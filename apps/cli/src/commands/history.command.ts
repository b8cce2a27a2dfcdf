import { type CommandDescription } from '../command.js';
import { type SyncRunQuery, type SyncRunView } from '../fleet/hub-client.js';
import { UsageError } from '../offline/offline-command.js';
import {
  columnsTable,
  expectPositionals,
  printResult,
  describeHubCommand,
  runHubCommand,
  showOrWatch,
  WATCH_OPTIONS,
  WATCH_USAGE,
  shortSha,
  stringValue,
  type Column,
  type HubCommandSpec,
} from './hub-command.js';

const DEFAULT_LIMIT = 50;
/** The hub's largest page. */
const MAX_PAGE = 500;

const SPEC: HubCommandSpec = {
  name: 'history',
  listings: [''],
  usage: [
    'usage: flotilla history [--target T] [--cluster C] [--appset A] [--outcome O,…] [--trigger T,…]',
    '                        [--since TIME] [--until TIME] [--limit N | --all] [--ndjson] [--watch [--timeout S]]',
    '',
    'Sync runs recorded by the hub, newest first: every attempt with its trigger, revision and outcome.',
    'Filters combine: --outcome Succeeded|Failed|Partial|Blocked and --trigger auto|manual|self-heal|rollback',
    'take comma-separated lists; --since (inclusive) and --until (exclusive) are RFC 3339 times.',
    `--limit N shows at most N runs (default ${DEFAULT_LIMIT}); --all follows the hub's pages to the end.`,
    '-o json prints one array; --ndjson prints one JSON object per line as pages arrive; -o wide adds',
    "the appset, the whole commit, the requested sync's operation id and the bundle digest.",
    '',
    WATCH_USAGE,
    '                (--watch shows the newest --limit runs; not with --all or --ndjson)',
  ].join('\n'),
  options: {
    target: { type: 'string' },
    cluster: { type: 'string' },
    appset: { type: 'string' },
    // The old spelling, still accepted with a warning: --appset is the one spelling of every command.
    'app-set': { type: 'string', deprecated: 'appset' },
    outcome: { type: 'string' },
    trigger: { type: 'string' },
    since: { type: 'string' },
    until: { type: 'string' },
    limit: { type: 'string' },
    all: { type: 'boolean' },
    ndjson: { type: 'boolean' },
    ...WATCH_OPTIONS,
  },
};

export const describe: CommandDescription = describeHubCommand(SPEC);

export function run(argv: string[]): Promise<number> {
  return runHubCommand(argv, SPEC, async ({ values, positionals, output, outputGiven, client }) => {
    expectPositionals(positionals, [], 'flotilla history [filters] [--limit N | --all]');
    const all = values['all'] === true;
    const ndjson = values['ndjson'] === true;
    const rawLimit = stringValue(values['limit']);
    if (all && rawLimit !== undefined) throw new UsageError('--limit and --all exclude each other');
    if (ndjson && outputGiven) throw new UsageError('--ndjson and -o exclude each other');
    const limit = rawLimit === undefined ? DEFAULT_LIMIT : parseLimit(rawLimit);
    if (values['watch'] === true && (all || ndjson))
      throw new UsageError(`--watch and --${all ? 'all' : 'ndjson'} exclude each other`);
    const filter: SyncRunQuery = {
      target: stringValue(values['target']),
      cluster: stringValue(values['cluster']),
      appSet: stringValue(values['appset']),
      outcome: stringValue(values['outcome']),
      trigger: stringValue(values['trigger']),
      from: stringValue(values['since']),
      to: stringValue(values['until']),
    };

    if (values['watch'] === true || values['timeout'] !== undefined) {
      // One page per poll: a watch shows the newest runs, as `kubectl get -w` shows the current objects.
      const newest = async (): Promise<SyncRunView[]> =>
        (await client.syncRuns({ ...filter, limit: Math.min(limit, MAX_PAGE) })).items.slice(0, limit);
      return showOrWatch({ values, output }, newest, runTable);
    }

    const runs: SyncRunView[] = [];
    let cursor: string | undefined;
    let remaining = all ? Infinity : limit;
    while (remaining > 0) {
      const page = await client.syncRuns({ ...filter, limit: Math.min(remaining, MAX_PAGE), cursor });
      const items = page.items.slice(0, remaining);
      remaining -= items.length;
      // NDJSON streams: a consumer sees the newest runs while older pages are still being fetched.
      if (ndjson) process.stdout.write(items.map((r) => `${JSON.stringify(r)}\n`).join(''));
      else runs.push(...items);
      if (!page.nextCursor || items.length === 0) break;
      cursor = page.nextCursor;
    }
    if (!ndjson) printResult(runs, output, (wide) => runTable(runs, wide));
    return 0;
  });
}

function parseLimit(raw: string): number {
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) throw new UsageError(`--limit must be a positive integer, not '${raw}'`);
  return n;
}

function duration(run: SyncRunView): string {
  const ms = Date.parse(run.finishedAt) - Date.parse(run.startedAt);
  if (!Number.isFinite(ms) || ms < 0) return '-';
  return ms < 10_000 ? `${(ms / 1000).toFixed(1)}s` : `${Math.round(ms / 1000)}s`;
}

/** A revision: shortened in the table, whole (every source's) in the wide one. */
const revision = (sha: string, wide: boolean): string => (wide ? sha : shortSha(sha));

const RUN_COLUMNS: Column<SyncRunView>[] = [
  { header: 'STARTED', cell: (r) => r.startedAt.replace(/\.\d+Z$/, 'Z') },
  { header: 'CLUSTER', cell: (r) => r.cluster },
  { header: 'TARGET', cell: (r) => r.target },
  { header: 'APPSET', cell: (r) => r.appSet, wide: true },
  { header: 'REVISION', cell: (r, wide) => revision(r.revision, wide) },
  { header: 'TRIGGER', cell: (r) => r.trigger },
  { header: 'OUTCOME', cell: (r) => r.outcome },
  { header: 'DURATION', cell: duration },
  { header: 'OPERATION', cell: (r) => r.operationId ?? '-', wide: true },
  { header: 'BUNDLE', cell: (r) => r.bundleDigest, wide: true },
  { header: 'MESSAGE', cell: (r) => (r.message ?? '').replace(/\s*\n\s*/g, ' ') },
];

export function runTable(runs: SyncRunView[], wide = false): string {
  return columnsTable(RUN_COLUMNS, runs, wide);
}
