import type {
  SyncWindow,
  SyncWindowCalendarView,
  SyncWindowVersionView,
  SyncWindowView,
  TargetWindowsView,
} from '@flotilla/contract';
import { UsageError } from '../offline/offline-command.js';
import {
  HUB_SUBCOMMANDS,
  hasWindowFlags,
  requestOfView,
  WINDOW_API_FIELDS,
  WINDOW_EDIT_OPTIONS,
  WINDOW_EDIT_USAGE,
  windowRequest,
} from './window-request.js';
import {
  columnsTable,
  expectName,
  expectPositionals,
  formatFields,
  formatTable,
  printResult,
  runHubCommand,
  stringValue,
  type Column,
  type HubCommandSpec,
} from './hub-command.js';

const CREATE_USAGE = 'flotilla windows create NAME (--kind K --schedule CRON --duration D [...] | -f FILE)';
const UPDATE_USAGE = 'flotilla windows update NAME (FLAGS to change | -f FILE) [--reason TEXT]';
const CALENDAR_USAGE = 'flotilla windows calendar NAME [--since TIME] [--days N]';

const SPEC: HubCommandSpec = {
  name: 'windows',
  subcommands: HUB_SUBCOMMANDS,
  // Not '': `flotilla windows` alone is the offline evaluator of CLI.md.
  listings: ['list', 'history'],
  usage: [
    'usage: flotilla windows list',
    '       flotilla windows show NAME',
    '       flotilla windows history NAME',
    '       flotilla windows next TARGET',
    `       ${CREATE_USAGE}`,
    `       ${UPDATE_USAGE}`,
    '       flotilla windows delete NAME [--reason TEXT]',
    `       ${CALENDAR_USAGE}`,
    '',
    "The hub's sync windows. `history` lists every version of a window with who changed it, when",
    'and why. `next` tells, for one target, which windows apply and which are active, whether it may',
    'sync now, when that next opens and closes, and what a window holds back ("pending, eligible at T").',
    '`create` and `update` take the window from flags or from a file (-f); `update` with flags changes',
    'only the fields given (switch --manual-sync or --match-all off with -f). `calendar` lists when the',
    'window is active from --since (default now) for --days days (1-31, default 7).',
    'A window managed in a fleet repository is changed there: the hub refuses it here.',
    '-o wide: `list` adds the projects, when each window last changed and its description; `history`',
    "each version's time zone, manual sync, projects and selectors.",
    'The offline evaluator is `flotilla windows -f WINDOWS --at TIME` (see its --help).',
    '',
    WINDOW_EDIT_USAGE,
  ].join('\n'),
  options: WINDOW_EDIT_OPTIONS,
  apiFields: { ...WINDOW_API_FIELDS, from: 'since', days: 'days' },
};

const EDIT_SUBCOMMANDS = ['create', 'update', 'delete'];

export function run(argv: string[]): Promise<number> {
  return runHubCommand(argv, SPEC, async ({ values, positionals, output, client }) => {
    const [sub = 'list', ...rest] = positionals;
    if (!EDIT_SUBCOMMANDS.includes(sub) && (hasWindowFlags(values) || values['file'] !== undefined))
      throw new UsageError(`-f and the window flags apply to 'windows create' and 'windows update' only`);
    if (sub !== 'calendar' && (values['since'] !== undefined || values['days'] !== undefined))
      throw new UsageError(`--since and --days apply to 'windows calendar' only`);
    switch (sub) {
      case 'list': {
        expectPositionals(rest, [], 'flotilla windows list');
        const windows = await client.request<SyncWindowView[]>('GET', '/api/v1/windows');
        printResult(windows, output, (wide) => windowTable(windows, wide));
        return 0;
      }
      case 'show': {
        const name = expectName(rest, 'flotilla windows show NAME');
        const w = await client.request<SyncWindowView>('GET', `/api/v1/windows/${encodeURIComponent(name)}`);
        printResult(w, output, () => windowFields(w));
        return 0;
      }
      case 'history': {
        const name = expectName(rest, 'flotilla windows history NAME');
        const versions = await client.request<SyncWindowVersionView[]>(
          'GET',
          `/api/v1/windows/${encodeURIComponent(name)}/history`,
        );
        printResult(versions, output, (wide) => historyTable(versions, wide));
        return 0;
      }
      case 'next': {
        const target = expectName(rest, 'flotilla windows next TARGET');
        const view = await client.request<TargetWindowsView>(
          'GET',
          `/api/v1/targets/${encodeURIComponent(target)}/windows`,
        );
        printResult(view, output, () => nextText(view));
        return 0;
      }
      case 'create': {
        const [name] = expectPositionals(rest, ['NAME'], CREATE_USAGE);
        const body = windowRequest(values);
        if (body['name'] !== undefined && body['name'] !== name)
          throw new UsageError(`the file names the window ${JSON.stringify(body['name'])}, not '${name}'`);
        const w = await client.request<SyncWindowView>('POST', '/api/v1/windows', { ...body, name });
        printResult(
          w,
          output,
          () => `Created sync window ${w.name} (version ${w.version}).\n${windowFields(w)}`,
        );
        return 0;
      }
      case 'update': {
        const name = expectName(rest, UPDATE_USAGE);
        if (values['file'] === undefined && !hasWindowFlags(values))
          throw new UsageError(
            `nothing to change: give the fields to change as flags, or -f FILE; usage: ${UPDATE_USAGE}`,
          );
        const path = `/api/v1/windows/${encodeURIComponent(name)}`;
        // With flags, the fields not given stay as they are: the hub replaces the whole window.
        const base =
          values['file'] === undefined
            ? requestOfView(await client.request<SyncWindowView>('GET', path))
            : {};
        const w = await client.request<SyncWindowView>('PUT', path, windowRequest(values, base));
        printResult(
          w,
          output,
          () => `Updated sync window ${w.name} (version ${w.version}).\n${windowFields(w)}`,
        );
        return 0;
      }
      case 'delete': {
        const name = expectName(rest, 'flotilla windows delete NAME [--reason TEXT]');
        const reason = stringValue(values['reason']);
        const query = reason === undefined ? '' : `?reason=${encodeURIComponent(reason)}`;
        await client.request('DELETE', `/api/v1/windows/${encodeURIComponent(name)}${query}`);
        printResult(
          { deleted: name },
          output,
          () => `Sync window ${name} deleted; it holds nothing any more.`,
        );
        return 0;
      }
      case 'calendar': {
        const name = expectName(rest, CALENDAR_USAGE);
        const since = stringValue(values['since']);
        const days = stringValue(values['days']);
        const query = new URLSearchParams({
          ...(since !== undefined && { from: since }),
          ...(days !== undefined && { days }),
        });
        const view = await client.request<SyncWindowCalendarView>(
          'GET',
          `/api/v1/windows/${encodeURIComponent(name)}/calendar${query.size > 0 ? `?${query.toString()}` : ''}`,
        );
        printResult(view, output, () => calendarText(view));
        return 0;
      }
      default:
        throw new UsageError(`unknown sub-command '${sub}'; expected ${HUB_SUBCOMMANDS.join(', ')}`);
    }
  });
}

function calendarText(v: SyncWindowCalendarView): string {
  const head = `${v.kind} window ${v.window} (${v.timeZone}), from ${v.from} to ${v.to}:`;
  if (v.intervals.length === 0) return `${head} never active.`;
  return `${head}\n\n${formatTable(
    ['ACTIVE FROM', 'UNTIL'],
    v.intervals.map((i) => [i.start, i.end]),
  )}`;
}

const selectors = (w: SyncWindow) =>
  [
    w.applications.length > 0 ? `apps=${w.applications.join(',')}` : '',
    w.namespaces.length > 0 ? `ns=${w.namespaces.join(',')}` : '',
    w.clusters.length > 0 ? `clusters=${w.clusters.join(',')}` : '',
  ]
    .filter(Boolean)
    .join(w.andOperator ? ' AND ' : ' OR ');

const WINDOW_COLUMNS: Column<SyncWindowView>[] = [
  { header: 'NAME', cell: (w) => w.name },
  { header: 'KIND', cell: (w) => w.kind },
  { header: 'SCHEDULE', cell: (w) => w.schedule },
  { header: 'DURATION', cell: (w) => w.duration },
  { header: 'TIME ZONE', cell: (w) => w.timeZone },
  { header: 'MANUAL', cell: (w) => String(w.manualSync) },
  { header: 'PROJECTS', cell: (w) => (w.projects.length > 0 ? w.projects.join(',') : '*'), wide: true },
  { header: 'SELECTORS', cell: selectors },
  { header: 'VERSION', cell: (w) => String(w.version) },
  { header: 'UPDATED', cell: (w) => w.updatedAt, wide: true },
  { header: 'DESCRIPTION', cell: (w) => w.description.replace(/\s*\n\s*/g, ' ') || '-', wide: true },
];

export function windowTable(windows: SyncWindowView[], wide = false): string {
  return columnsTable(WINDOW_COLUMNS, windows, wide);
}

function windowFields(w: SyncWindowView): string {
  return formatFields([
    ['Name', w.name],
    ['Kind', w.kind],
    ['Schedule', `${w.schedule} for ${w.duration} (${w.timeZone})`],
    ['Selectors', selectors(w) || '(none: applies to nothing)'],
    ['Manual sync', w.manualSync ? 'allowed inside the window' : 'no'],
    ['Description', w.description || '-'],
    ['Version', `${w.version} (updated ${w.updatedAt})`],
  ]);
}

const VERSION_COLUMNS: Column<SyncWindowVersionView>[] = [
  { header: 'VERSION', cell: (v) => String(v.version) },
  { header: 'AT', cell: (v) => v.at },
  { header: 'CHANGE', cell: (v) => v.change },
  { header: 'ACTOR', cell: (v) => v.actor },
  { header: 'KIND', cell: (v) => v.window.kind },
  { header: 'SCHEDULE', cell: (v) => v.window.schedule },
  { header: 'DURATION', cell: (v) => v.window.duration },
  { header: 'TIME ZONE', cell: (v) => v.window.timeZone, wide: true },
  { header: 'MANUAL', cell: (v) => String(v.window.manualSync), wide: true },
  { header: 'PROJECTS', cell: (v) => (v.projects.length > 0 ? v.projects.join(',') : '*'), wide: true },
  { header: 'SELECTORS', cell: (v) => selectors(v.window) || '-', wide: true },
  { header: 'REASON', cell: (v) => v.reason || '-' },
];

export function historyTable(versions: SyncWindowVersionView[], wide = false): string {
  return columnsTable(VERSION_COLUMNS, versions, wide);
}

/**
 * Nothing opens within a year: the windows holding it are always in force (a freeze), so they end
 * only when a person changes or deletes them. Say which, rather than "no time within a year".
 */
function neverOpens(v: TargetWindowsView): string {
  const held = v.heldBy ?? [];
  if (held.length === 0) return 'not within a year';
  const names = held.join(', ');
  return `when ${held.length > 1 ? 'windows' : 'window'} ${names} ${held.length > 1 ? 'are' : 'is'} changed or deleted (always in force; nothing opens within a year)`;
}

function nextText(v: TargetWindowsView): string {
  const lines = [
    formatFields([
      ['Target', `${v.target} on ${v.cluster}`],
      ['Can sync now', v.canSync ? 'yes' : v.canSyncManually ? 'manual syncs only' : 'no'],
      ['Held by', v.heldBy.length > 0 ? v.heldBy.join(', ') : '-'],
      ['Next open', v.canSync ? 'open now' : (v.nextOpen ?? neverOpens(v))],
      ['Next close', v.nextClose ?? '-'],
      [
        'Pending',
        v.pending
          ? `${v.pending.revision.slice(0, 7)} (${v.pending.trigger}) blocked since ${v.pending.since}, eligible ${v.pending.eligibleAt ? `at ${v.pending.eligibleAt}` : neverOpens(v)}`
          : 'nothing',
      ],
      [
        'Break-glass',
        v.breakGlass.length > 0
          ? v.breakGlass.map((b) => `#${b.id} until ${b.expiresAt}: ${b.reason}`).join('; ')
          : 'none',
      ],
    ]),
  ];
  if (v.windows.length > 0) {
    lines.push(
      '',
      formatTable(
        ['WINDOW', 'KIND', 'SCHEDULE', 'DURATION', 'TIME ZONE', 'ACTIVE'],
        v.windows.map((w) => [w.name, w.kind, w.schedule, w.duration, w.timeZone, w.active ? 'yes' : 'no']),
      ),
    );
  }
  return lines.join('\n');
}
