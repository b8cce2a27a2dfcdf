import { auditCsvHeader, auditCsvRow, auditNdjsonLine, type AuditEventView } from '@flotilla/contract';
import { UsageError } from '../offline/offline-command.js';
import {
  expectPositionals,
  formatTable,
  printResult,
  runHubCommand,
  stringValue,
  type HubArgValue,
  type HubCommandSpec,
} from './hub-command.js';

const DEFAULT_LIMIT = 50;
/** The hub's largest page. */
const MAX_PAGE = 500;

export type { AuditEventView } from '@flotilla/contract';

interface AuditPage {
  items: AuditEventView[];
  nextCursor: string | null;
}

export interface AuditVerifyResult {
  valid: boolean;
  checked: number;
  unchained?: number;
  firstBrokenAt?: { id: string; at: string; reason: string; message?: string };
}

const LIST_USAGE =
  'flotilla audit [list] [--actor A] [--action PREFIX] [--scope S | --scope-prefix P] [--from T] [--to T] [--outcome O] [--limit N | --all] [-o table|json|yaml | --ndjson | --csv]';

const SPEC: HubCommandSpec = {
  name: 'audit',
  usage: [
    `usage: ${LIST_USAGE}`,
    '       flotilla audit verify',
    '',
    "The hub's audit log, newest first: who did what, on which scope, when and why.",
    '--scope is exact (cluster:eu1, appset:web, target:web-eu1); --action and --scope-prefix are prefixes;',
    '--from (inclusive) and --to (exclusive) are RFC 3339 times.',
    `--limit N shows at most N events (default ${DEFAULT_LIMIT}); --all follows the hub's pages to the end.`,
    '--ndjson prints one JSON object per line, --csv a header row and one row per event, as pages arrive.',
    '',
    'verify walks the whole hash chain on the hub: exit 0 when intact, 1 naming the first broken event',
    'and why (hash-mismatch: its content was edited; broken-link: a row was deleted or inserted before it;',
    'genesis: the start of the chain was removed).',
  ].join('\n'),
  options: {
    actor: { type: 'string' },
    action: { type: 'string' },
    scope: { type: 'string' },
    'scope-prefix': { type: 'string' },
    from: { type: 'string' },
    to: { type: 'string' },
    outcome: { type: 'string' },
    limit: { type: 'string' },
    all: { type: 'boolean' },
    ndjson: { type: 'boolean' },
    csv: { type: 'boolean' },
  },
};

export function run(argv: string[]): Promise<number> {
  return runHubCommand(argv, SPEC, async ({ values, positionals, output, outputGiven, client }) => {
    const [sub = 'list', ...rest] = positionals;
    if (sub === 'verify') {
      expectPositionals(rest, [], 'flotilla audit verify');
      const listOnly = Object.keys(SPEC.options).filter((k) => values[k] !== undefined);
      if (listOnly.length > 0)
        throw new UsageError(`--${listOnly[0]} is an option of 'audit list', not 'audit verify'`);
      const result = await client.request<AuditVerifyResult>('GET', '/api/v1/audit/verify');
      printResult(result, output, () => verifyText(result));
      return result.valid ? 0 : 1;
    }
    if (sub !== 'list') throw new UsageError(`unknown sub-command '${sub}'; usage: ${LIST_USAGE}`);
    expectPositionals(rest, [], LIST_USAGE);

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
    add('from', time('--from', values['from']));
    add('to', time('--to', values['to']));

    if (csv) process.stdout.write(auditCsvHeader());
    const events: AuditEventView[] = [];
    let cursor: string | undefined;
    let remaining = all ? Infinity : limit;
    while (remaining > 0) {
      const query = new URLSearchParams(filter);
      query.set('limit', String(Math.min(remaining, MAX_PAGE)));
      if (cursor) query.set('cursor', cursor);
      const page = await client.request<AuditPage>('GET', `/api/v1/audit?${query.toString()}`);
      const items = page.items.slice(0, remaining);
      remaining -= items.length;
      // Streamed formats: a consumer sees the newest events while older pages are still being fetched.
      if (ndjson) process.stdout.write(items.map(auditNdjsonLine).join(''));
      else if (csv) process.stdout.write(items.map(auditCsvRow).join(''));
      else events.push(...items);
      if (!page.nextCursor || items.length === 0) break;
      cursor = page.nextCursor;
    }
    if (!ndjson && !csv) printResult(events, output, () => eventTable(events));
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

function eventTable(events: AuditEventView[]): string {
  return formatTable(
    ['AT', 'ACTOR', 'ACTION', 'SCOPE', 'DETAILS'],
    events.map((e) => [
      e.at.replace(/\.\d+Z$/, 'Z'),
      e.actor,
      e.action,
      e.scope,
      e.details && typeof e.details === 'object' && Object.keys(e.details).length === 0
        ? ''
        : JSON.stringify(e.details),
    ]),
  );
}

export function verifyText(r: AuditVerifyResult): string {
  const legacy = r.unchained ? ` (${r.unchained} older events predate the chain)` : '';
  if (r.valid) return `audit chain intact: ${r.checked} events checked${legacy}`;
  const b = r.firstBrokenAt;
  if (!b) return `audit chain BROKEN after ${r.checked} events`;
  return `audit chain BROKEN at event ${b.id} (${b.at}): ${b.reason}${b.message ? ` — ${b.message}` : ''}`;
}
