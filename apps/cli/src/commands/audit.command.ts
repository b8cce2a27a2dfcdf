import { type CommandDescription } from '../command.js';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import {
  auditCsvHeader,
  auditCsvRow,
  auditNdjsonLine,
  type AuditArchiveCheckpoint,
  type AuditEventView,
  type AuditPageView,
  type AuditVerifyView,
} from '@flotilla/contract';
import { UsageError } from '../offline/offline-command.js';
import {
  columnsTable,
  expectPositionals,
  printResult,
  describeHubCommand,
  runHubCommand,
  stringValue,
  type Column,
  type HubArgValue,
  type HubCommandSpec,
  type ListingFormat,
} from './hub-command.js';

const DEFAULT_LIMIT = 50;
/** The hub's largest page. */
const MAX_PAGE = 500;

export type { AuditEventView, AuditVerifyView } from '@flotilla/contract';

const ARCHIVE_USAGE = 'flotilla audit archive --before T --out FILE';
const PRUNE_USAGE = 'flotilla audit prune FILE';

const LIST_USAGE =
  'flotilla audit [list] [--actor A] [--action PREFIX] [--scope S | --scope-prefix P] [--since T] [--until T] [--outcome O] [--limit N | --all] [-o table|wide|json|yaml | --ndjson | --csv]';

const SPEC: HubCommandSpec = {
  name: 'audit',
  subcommands: ['list', 'verify', 'archive', 'prune'],
  listings: ['', 'list'],
  usage: [
    `usage: ${LIST_USAGE}`,
    '       flotilla audit verify [--full]',
    `       ${ARCHIVE_USAGE}`,
    `       ${PRUNE_USAGE}`,
    '',
    "The hub's audit log, newest first: who did what, on which scope, when and why.",
    '--scope is exact (cluster:eu1, appset:web, target:web-eu1); --action and --scope-prefix are prefixes;',
    '--since (inclusive) and --until (exclusive) are RFC 3339 times.',
    `--limit N shows at most N events (default ${DEFAULT_LIMIT}); --all follows the hub's pages to the end.`,
    '--ndjson prints one JSON object per line, --csv a header row and one row per event, as pages arrive.',
    "-o wide adds each event's id and its hash in the chain.",
    '',
    "verify checks the hash chain on the hub from where it was last verified (the hub stores each lane's",
    'position; a break the last full pass found still counts): exit 0 when intact, 1 naming the first broken',
    'event and why (hash-mismatch: its content was edited; broken-link: a row was deleted or inserted before it;',
    'genesis: the start of the chain was removed). --full rereads the whole chain (admin; the hub also does',
    'this hourly).',
    '',
    'archive writes every event before --before not archived yet to FILE (NDJSON, oldest first, ending with',
    "the chain's checkpoint); it changes nothing. prune FILE checks the file against its checkpoint, then asks",
    'the hub to delete exactly those events (admin; refused unless the hub holds exactly them). Verification',
    'then starts at the checkpoint. Keep the archive: it is the record of what was pruned.',
  ].join('\n'),
  options: {
    actor: { type: 'string' },
    action: { type: 'string' },
    scope: { type: 'string' },
    'scope-prefix': { type: 'string' },
    since: { type: 'string' },
    until: { type: 'string' },
    // The old spellings, still accepted with a warning: --since/--until are every command's.
    from: { type: 'string', deprecated: 'since' },
    to: { type: 'string', deprecated: 'until' },
    outcome: { type: 'string' },
    limit: { type: 'string' },
    all: { type: 'boolean' },
    ndjson: { type: 'boolean' },
    csv: { type: 'boolean' },
    before: { type: 'string' },
    out: { type: 'string' },
    full: { type: 'boolean' },
  },
};

export const describe: CommandDescription = describeHubCommand(SPEC);

/** The options of `audit list` (the others belong to archive). */
const LIST_OPTIONS = [
  'actor',
  'action',
  'scope',
  'scope-prefix',
  'since',
  'until',
  'outcome',
  'limit',
  'all',
  'ndjson',
  'csv',
];

export function run(argv: string[]): Promise<number> {
  return runHubCommand(argv, SPEC, async ({ values, positionals, output, outputGiven, client }) => {
    const [sub = 'list', ...rest] = positionals;
    if (sub === 'verify') {
      expectPositionals(rest, [], 'flotilla audit verify [--full]');
      const listOnly = Object.keys(SPEC.options).filter((k) => k !== 'full' && values[k] !== undefined);
      if (listOnly.length > 0)
        throw new UsageError(
          `--${listOnly[0]} is an option of 'audit ${LIST_OPTIONS.includes(listOnly[0]!) ? 'list' : 'archive'}', not 'audit verify'`,
        );
      const path = values['full'] ? '/api/v1/audit/verify?full=true' : '/api/v1/audit/verify';
      const result = await client.request<AuditVerifyView>('GET', path);
      printResult(result, output, () => verifyText(result));
      return result.valid ? 0 : 1;
    }
    if (values['full'] !== undefined)
      throw new UsageError(`--full is an option of 'audit verify', not 'audit ${sub}'`);
    if (sub === 'archive' || sub === 'prune') {
      const misplaced = LIST_OPTIONS.find((k) => values[k] !== undefined);
      if (misplaced) throw new UsageError(`--${misplaced} is an option of 'audit list', not 'audit ${sub}'`);
      if (sub === 'archive') {
        expectPositionals(rest, [], ARCHIVE_USAGE);
        return archive(client, values, output);
      }
      if (values['before'] !== undefined || values['out'] !== undefined)
        throw new UsageError(`--before and --out are options of 'audit archive'; usage: ${PRUNE_USAGE}`);
      const [file] = expectPositionals(rest, ['FILE'], PRUNE_USAGE);
      return prune(client, file!, output);
    }
    if (sub !== 'list') throw new UsageError(`unknown sub-command '${sub}'; usage: ${LIST_USAGE}`);
    expectPositionals(rest, [], LIST_USAGE);
    if (values['before'] !== undefined || values['out'] !== undefined)
      throw new UsageError(`--before and --out are options of 'audit archive'; usage: ${ARCHIVE_USAGE}`);

    const all = values['all'] === true;
    const ndjson = values['ndjson'] === true;
    const csv = values['csv'] === true;
    const rawLimit = stringValue(values['limit']);
    if (all && rawLimit !== undefined) throw new UsageError('--limit and --all exclude each other');
    if (ndjson && csv) throw new UsageError('--ndjson and --csv exclude each other');
    if ((ndjson || csv) && outputGiven)
      throw new UsageError(`--${ndjson ? 'ndjson' : 'csv'} and -o exclude each other`);
    if (values['scope'] !== undefined && values['scope-prefix'] !== undefined) {
      throw new UsageError('--scope and --scope-prefix exclude each other');
    }
    const limit = rawLimit === undefined ? DEFAULT_LIMIT : parseLimit(rawLimit);
    const filter = new URLSearchParams();
    const add = (param: string, value: HubArgValue) => {
      const v = stringValue(value);
      if (v !== undefined) filter.set(param, v);
    };
    add('actor', values['actor']);
    add('action', values['action']);
    add('scope', values['scope']);
    add('scopePrefix', values['scope-prefix']);
    add('outcome', values['outcome']);
    add('from', time('--since', values['since']));
    add('to', time('--until', values['until']));

    if (csv) process.stdout.write(auditCsvHeader());
    const events: AuditEventView[] = [];
    let cursor: string | undefined;
    let remaining = all ? Infinity : limit;
    while (remaining > 0) {
      const query = new URLSearchParams(filter);
      query.set('limit', String(Math.min(remaining, MAX_PAGE)));
      if (cursor) query.set('cursor', cursor);
      const page = await client.request<AuditPageView>('GET', `/api/v1/audit?${query.toString()}`);
      const items = page.items.slice(0, remaining);
      remaining -= items.length;
      // Streamed formats: a consumer sees the newest events while older pages are still being fetched.
      if (ndjson) process.stdout.write(items.map(auditNdjsonLine).join(''));
      else if (csv) process.stdout.write(items.map(auditCsvRow).join(''));
      else events.push(...items);
      if (!page.nextCursor || items.length === 0) break;
      cursor = page.nextCursor;
    }
    if (!ndjson && !csv) printResult(events, output, (wide) => eventTable(events, wide));
    return 0;
  });
}

function parseLimit(raw: string): number {
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) throw new UsageError(`--limit must be a positive integer, not '${raw}'`);
  return n;
}

/** Checked here too, so a typo is a usage error (exit 2) rather than the hub's 400 (exit 1). */
function time(flag: string, value: HubArgValue): string | undefined {
  const v = stringValue(value);
  if (v === undefined) return undefined;
  if (
    !/^\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:\d\d)$/.test(v) ||
    Number.isNaN(Date.parse(v))
  ) {
    throw new UsageError(`${flag} must be an RFC 3339 time such as 2026-03-29T01:00:00Z, not '${v}'`);
  }
  return v;
}

const EVENT_COLUMNS: Column<AuditEventView>[] = [
  { header: 'ID', cell: (e) => e.id, wide: true },
  { header: 'AT', cell: (e) => e.at.replace(/\.\d+Z$/, 'Z') },
  { header: 'ACTOR', cell: (e) => e.actor },
  { header: 'ACTION', cell: (e) => e.action },
  { header: 'SCOPE', cell: (e) => e.scope },
  // The chain link: what `audit verify` and an archive's checkpoint name.
  { header: 'HASH', cell: (e) => e.hash ?? '-', wide: true },
  {
    header: 'DETAILS',
    cell: (e) =>
      e.details && typeof e.details === 'object' && Object.keys(e.details).length === 0
        ? ''
        : JSON.stringify(e.details),
  },
];

export function eventTable(events: AuditEventView[], wide = false): string {
  return columnsTable(EVENT_COLUMNS, events, wide);
}

export function verifyText(r: AuditVerifyView): string {
  const legacy = r.unchained ? ` (${r.unchained} older events predate the chain)` : '';
  // The hub stopped at its row budget: what it has not reached yet is checked by the next call.
  const more = r.complete === false ? ' (more to check: run verify again)' : '';
  if (r.valid) return `audit chain intact: ${r.checked} events checked${legacy}${more}`;
  const b = r.firstBrokenAt;
  if (!b) return `audit chain BROKEN after ${r.checked} events`;
  const lane = b.lane !== undefined ? ` in lane ${b.lane}` : '';
  return `audit chain BROKEN at event ${b.id}${lane} (${b.at}): ${b.reason}${b.message ? ` — ${b.message}` : ''}`;
}

async function archive(
  client: HubClientLike,
  values: Record<string, HubArgValue>,
  output: ListingFormat,
): Promise<number> {
  const before = time('--before', values['before']);
  const out = stringValue(values['out']);
  if (before === undefined || out === undefined)
    throw new UsageError(`--before and --out are required; usage: ${ARCHIVE_USAGE}`);
  // An archive is the only copy of what a prune deletes: never written over another.
  if (existsSync(out)) throw new UsageError(`${out} exists; an archive is never written over another file`);
  const text = await client.text(`/api/v1/audit/archive?before=${encodeURIComponent(before)}`);
  writeFileSync(out, text, { flag: 'wx' });
  const parsed = readArchive(text, out);
  if ('broken' in parsed) {
    process.stderr.write(
      `flotilla audit: the audit chain is broken (${parsed.broken.reason} at event ${parsed.broken.id}); ${out} holds the events before it and cannot be pruned\n`,
    );
    return 1;
  }
  const c = parsed.checkpoint;
  printResult(
    { file: out, ...c },
    output,
    () =>
      `archived ${c.events} events through event ${c.throughId} to ${out}\ncheckpoint ${c.hash}, sha256 ${c.sha256}\nnext: flotilla audit prune ${out}`,
  );
  return 0;
}

async function prune(client: HubClientLike, file: string, output: ListingFormat): Promise<number> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new UsageError(`cannot read ${file}: ${(e as Error).message}`);
  }
  const parsed = readArchive(text, file);
  if ('broken' in parsed) throw new UsageError(`${file} ends in a broken chain: it cannot be pruned`);
  const { throughId, hash, sha256, lanes } = parsed.checkpoint;
  // The file must be what the hub exported, or the hub would delete events no intact copy holds.
  if (parsed.sha256 !== sha256) {
    throw new UsageError(
      `${file} does not match its checkpoint (its event lines give sha256 ${parsed.sha256}, the checkpoint says ${sha256}): it was changed since it was exported`,
    );
  }
  const result = await client.request<{ pruned: number; checkpoint: { throughId: string; hash: string } }>(
    'POST',
    '/api/v1/audit/prune',
    // Each lane's cut, as exported (an archive from before lanes has none: the hub reads it as lane 0's).
    {
      throughId,
      hash,
      sha256,
      ...(lanes && { lanes: lanes.map((l) => ({ lane: l.lane, throughId: l.throughId, hash: l.hash })) }),
    },
  );
  printResult(
    result,
    output,
    () =>
      `pruned ${result.pruned} audit events through event ${throughId}; verification now starts at checkpoint ${hash}`,
  );
  return 0;
}

type HubClientLike = Parameters<Parameters<typeof runHubCommand>[2]>[0]['client'];

/** An archive file: its checkpoint (or where the chain broke) and the sha256 of its event lines. */
function readArchive(
  text: string,
  file: string,
): { checkpoint: AuditArchiveCheckpoint; sha256: string } | { broken: { id: string; reason: string } } {
  const lines = text.split('\n');
  if (lines.at(-1) === '') lines.pop();
  const lastLine = lines.pop();
  let last: { checkpoint?: AuditArchiveCheckpoint; broken?: { id: string; reason: string } } = {};
  try {
    last = JSON.parse(lastLine ?? '') as typeof last;
  } catch {
    // Reported below.
  }
  if (last.broken) return { broken: last.broken };
  if (!last.checkpoint)
    throw new UsageError(`${file} is not an audit archive: its last line is no checkpoint`);
  const sha256 = createHash('sha256')
    .update(lines.map((l) => `${l}\n`).join(''))
    .digest('hex');
  return { checkpoint: last.checkpoint, sha256 };
}
