import { type CommandDescription } from '../command.js';
import type { BreakGlassRecordView, BreakGlassView, ManualChangeView } from '@flotilla/contract';
import { UsageError } from '../offline/offline-command.js';
import {
  columnsTable,
  expectName,
  expectPositionals,
  formatFields,
  printResult,
  describeHubCommand,
  runHubCommand,
  stringValue,
  type Column,
  type HubCommandSpec,
} from './hub-command.js';

const OPEN_USAGE =
  'flotilla break-glass open cluster|appset|target NAME --reason TEXT (--for MINUTES | --until TIME) [--allow-sync] [--pause-self-heal]';

const SPEC: HubCommandSpec = {
  name: 'break-glass',
  subcommands: ['open', 'close', 'list', 'record'],
  listings: ['', 'list', 'record'],
  usage: [
    `usage: ${OPEN_USAGE}`,
    '       flotilla break-glass close ID [--reason TEXT]',
    '       flotilla break-glass list [--active]',
    '       flotilla break-glass record ID',
    '',
    'Break-glass overrides for incidents. `open` lets the scope sync outside its sync windows',
    '(--allow-sync) and/or stops agents from reverting hand-made changes (--pause-self-heal), until',
    '--for MINUTES from now or --until an RFC 3339 time (at most BREAK_GLASS_MAX_MINUTES, 24 h by',
    'default). `close` ends it early; enforcement resumes at once. `record` lists every manual change',
    'agents saw under it, for the post-incident review. -o wide: `list` adds when each was opened, when',
    "and by whom it was closed, and why; `record` each object's API group and the agent's summary.",
  ].join('\n'),
  options: {
    reason: { type: 'string' },
    for: { type: 'string' },
    until: { type: 'string' },
    'allow-sync': { type: 'boolean' },
    'pause-self-heal': { type: 'boolean' },
    active: { type: 'boolean' },
  },
  apiFields: { reason: 'reason', durationMinutes: 'for', expiresAt: 'until' },
};

export const describe: CommandDescription = describeHubCommand(SPEC);

const SCOPES = ['cluster', 'appset', 'target'];

export function run(argv: string[]): Promise<number> {
  return runHubCommand(argv, SPEC, async ({ values, positionals, output, client }) => {
    const [sub = 'list', ...rest] = positionals;
    const openOnly = ['for', 'until', 'allow-sync', 'pause-self-heal'].filter((k) => values[k] !== undefined);
    if (sub !== 'open' && openOnly.length > 0) {
      throw new UsageError(`--${openOnly[0]} applies to 'break-glass open' only`);
    }
    switch (sub) {
      case 'open': {
        const [scope = '', name = ''] = expectPositionals(rest, ['SCOPE', 'NAME'], OPEN_USAGE);
        if (!SCOPES.includes(scope))
          throw new UsageError(`scope must be cluster, appset or target, not '${scope}'`);
        const reason = stringValue(values['reason']);
        if (!reason)
          throw new UsageError(`--reason is required: say what the incident is; usage: ${OPEN_USAGE}`);
        const minutes = stringValue(values['for']);
        const until = stringValue(values['until']);
        if ((minutes === undefined) === (until === undefined)) {
          throw new UsageError(`give exactly one of --for MINUTES and --until TIME; usage: ${OPEN_USAGE}`);
        }
        const body: Record<string, unknown> = {
          scope,
          name,
          reason,
          allowSyncOutsideWindows: values['allow-sync'] === true,
          pauseSelfHeal: values['pause-self-heal'] === true,
        };
        if (minutes !== undefined) {
          const n = Number(minutes);
          if (!Number.isInteger(n) || n < 1)
            throw new UsageError(`--for must be a whole number of minutes, not '${minutes}'`);
          body['durationMinutes'] = n;
        } else {
          body['expiresAt'] = until;
        }
        const opened = await client.request<BreakGlassView>('POST', '/api/v1/break-glass', body);
        printResult(opened, output, () =>
          [
            `Opened break-glass #${opened.id} on ${opened.scope} ${opened.name} until ${opened.expiresAt}.`,
            `Close it when done: flotilla break-glass close ${opened.id}`,
          ].join('\n'),
        );
        return 0;
      }
      case 'close': {
        const id = expectName(rest, 'flotilla break-glass close ID [--reason TEXT]');
        const reason = stringValue(values['reason']) ?? '';
        const closed = await client.request<BreakGlassView>(
          'POST',
          `/api/v1/break-glass/${encodeURIComponent(id)}/close`,
          { reason },
        );
        printResult(closed, output, () =>
          [
            `Closed break-glass #${closed.id}; enforcement resumes on ${closed.scope} ${closed.name}.`,
            `${closed.manualChanges} manual change(s) recorded: flotilla break-glass record ${closed.id}`,
          ].join('\n'),
        );
        return 0;
      }
      case 'list': {
        expectPositionals(rest, [], 'flotilla break-glass list [--active]');
        const state = values['active'] === true ? 'active' : 'all';
        const list = await client.request<BreakGlassView[]>('GET', `/api/v1/break-glass?state=${state}`);
        printResult(list, output, (wide) => listTable(list, wide));
        return 0;
      }
      case 'record': {
        const id = expectName(rest, 'flotilla break-glass record ID');
        const record = await client.request<BreakGlassRecordView>(
          'GET',
          `/api/v1/break-glass/${encodeURIComponent(id)}/record`,
        );
        printResult(record, output, (wide) => recordText(record, wide));
        return 0;
      }
      default:
        throw new UsageError(`unknown sub-command '${sub}'; expected open, close, list or record`);
    }
  });
}

const what = (b: BreakGlassView) =>
  [b.allowSyncOutsideWindows ? 'sync outside windows' : '', b.pauseSelfHeal ? 'self-heal paused' : '']
    .filter(Boolean)
    .join(', ');

/** When and by whom it was closed; `-` while open. */
const closedCell = (b: BreakGlassView): string =>
  b.closedAt ? `${b.closedAt} by ${b.closedBy ?? '-'}` : '-';

const BREAK_GLASS_COLUMNS: Column<BreakGlassView>[] = [
  { header: 'ID', cell: (b) => `#${b.id}` },
  { header: 'SCOPE', cell: (b) => b.scope },
  { header: 'NAME', cell: (b) => b.name },
  { header: 'STATE', cell: (b) => b.state },
  { header: 'OVERRIDES', cell: what },
  { header: 'OPENED BY', cell: (b) => b.openedBy },
  { header: 'OPENED', cell: (b) => b.openedAt, wide: true },
  { header: 'EXPIRES', cell: (b) => b.expiresAt },
  { header: 'CLOSED', cell: closedCell, wide: true },
  { header: 'CHANGES', cell: (b) => String(b.manualChanges) },
  { header: 'REASON', cell: (b) => b.reason },
  { header: 'CLOSE REASON', cell: (b) => b.closeReason ?? '-', wide: true },
];

export function listTable(list: BreakGlassView[], wide = false): string {
  return columnsTable(BREAK_GLASS_COLUMNS, list, wide);
}

const CHANGE_COLUMNS: Column<ManualChangeView>[] = [
  { header: 'AT', cell: (c) => c.at },
  { header: 'CLUSTER', cell: (c) => c.cluster },
  { header: 'TARGET', cell: (c) => c.target },
  { header: 'GROUP', cell: (c) => c.resource.group || 'core', wide: true },
  {
    header: 'OBJECT',
    cell: (c) =>
      `${c.resource.kind}/${c.resource.namespace ? `${c.resource.namespace}/` : ''}${c.resource.name}`,
  },
  { header: 'PATHS', cell: (c) => c.paths.join(',') },
  { header: 'MANAGER', cell: (c) => c.manager ?? '-' },
  { header: 'STATE', cell: (c) => c.state },
  { header: 'SUMMARY', cell: (c) => c.summary.replace(/\s*\n\s*/g, ' '), wide: true },
];

export function recordText(r: BreakGlassRecordView, wide = false): string {
  const b = r.breakGlass;
  const head = formatFields([
    ['Break-glass', `#${b.id} on ${b.scope} ${b.name} (${b.state})`],
    ['Reason', b.reason],
    ['Overrides', what(b)],
    ['Opened', `${b.openedAt} by ${b.openedBy}`],
    [
      'Closed',
      b.closedAt
        ? `${b.closedAt} by ${b.closedBy ?? '-'}${b.closeReason ? `: ${b.closeReason}` : ''}`
        : `no (expires ${b.expiresAt})`,
    ],
    ['Manual changes', String(r.changes.length)],
  ]);
  if (r.changes.length === 0) return head;
  return `${head}\n\n${columnsTable(CHANGE_COLUMNS, r.changes, wide)}`;
}
