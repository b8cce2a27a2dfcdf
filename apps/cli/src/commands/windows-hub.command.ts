import type {
  SyncWindow,
  SyncWindowVersionView,
  SyncWindowView,
  TargetWindowsView,
} from '@flotilla/contract';
import { UsageError } from '../offline/offline-command.js';
import {
  columnsTable,
  expectName,
  expectPositionals,
  formatFields,
  formatTable,
  printResult,
  runHubCommand,
  type Column,
  type HubCommandSpec,
} from './hub-command.js';

const SPEC: HubCommandSpec = {
  name: 'windows',
  subcommands: ['list', 'show', 'history', 'next'],
  // Not '': `flotilla windows` alone is the offline evaluator of CLI.md.
  listings: ['list', 'history'],
  usage: [
    'usage: flotilla windows list',
    '       flotilla windows show NAME',
    '       flotilla windows history NAME',
    '       flotilla windows next TARGET',
    '',
    "The hub's sync windows. `history` lists every version of a window with who changed it, when",
    'and why. `next` tells, for one target, which windows apply and which are active, whether it may',
    'sync now, when that next opens and closes, and what a window holds back ("pending, eligible at T").',
    '-o wide: `list` adds the projects, when each window last changed and its description; `history`',
    "each version's time zone, manual sync, projects and selectors.",
    'The offline evaluator is `flotilla windows -f WINDOWS --at TIME` (see its --help).',
  ].join('\n'),
  options: {},
};

export function run(argv: string[]): Promise<number> {
  return runHubCommand(argv, SPEC, async ({ positionals, output, client }) => {
    const [sub = 'list', ...rest] = positionals;
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
      default:
        throw new UsageError(`unknown sub-command '${sub}'; expected list, show, history or next`);
    }
  });
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
