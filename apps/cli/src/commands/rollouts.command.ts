import { type CommandDescription } from '../command.js';
import type { RolloutDetailView, RolloutView } from '@flotilla/contract';
import { UsageError } from '../offline/offline-command.js';
import {
  expectName,
  columnsTable,
  expectPositionals,
  formatFields,
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

/** A rollout as the hub shows it: the list and the actions answer RolloutView, status the detail. */
export type { RolloutView };

const ACTION_USAGE = 'flotilla rollouts pause|resume|promote APPSET --reason TEXT';

const SPEC: HubCommandSpec = {
  name: 'rollouts',
  subcommands: ['list', 'status', 'pause', 'resume', 'promote'],
  listings: ['', 'list', 'status'],
  usage: [
    'usage: flotilla rollouts [list] [--appset A] [--watch [--timeout S]]',
    '       flotilla rollouts status APPSET [--revision SHA] [--watch [--timeout S]]',
    `       ${ACTION_USAGE}`,
    '',
    'Fleet rollouts of appsets with a spec.rollout strategy. `status` shows the step, why the rollout',
    'waits, and every target: released, synced, health, pinned, failed or skipped (with the reason).',
    '`pause` stops releasing; `resume` continues; `promote` opens a manual gate (maxUnavailable 0) or',
    'moves past the current step without waiting. Every action needs --reason and is audited.',
    '-o wide: `list` adds when the step started, how many targets were released, failed or skipped and',
    "when it finished; `status` adds each target's desired revision and when it was released; both",
    'show whole commits.',
    '',
    WATCH_USAGE,
  ].join('\n'),
  options: {
    appset: { type: 'string' },
    // The old spelling, still accepted with a warning: --appset is the one spelling of every command.
    'app-set': { type: 'string', deprecated: 'appset' },
    revision: { type: 'string' },
    reason: { type: 'string' },
    ...WATCH_OPTIONS,
  },
};

export const describe: CommandDescription = describeHubCommand(SPEC);

export function run(argv: string[]): Promise<number> {
  return runHubCommand(argv, SPEC, async ({ values, positionals, output, client }) => {
    const [sub = 'list', ...rest] = positionals;
    if (
      sub !== 'list' &&
      sub !== 'status' &&
      (values['watch'] !== undefined || values['timeout'] !== undefined)
    )
      throw new UsageError(
        `--watch and --timeout apply to 'rollouts list' and 'rollouts status', not '${sub}'`,
      );
    switch (sub) {
      case 'list': {
        expectPositionals(rest, [], 'flotilla rollouts list [--appset A]');
        const appSet = stringValue(values['appset']);
        const path = `/api/v1/rollouts${appSet ? `?appSet=${encodeURIComponent(appSet)}` : ''}`;
        return showOrWatch({ values, output }, () => client.request<RolloutView[]>('GET', path), listTable);
      }
      case 'status': {
        const appSet = expectName(rest, 'flotilla rollouts status APPSET [--revision SHA]');
        const revision = stringValue(values['revision']);
        const path = `/api/v1/rollouts/${encodeURIComponent(appSet)}${revision ? `?revision=${encodeURIComponent(revision)}` : ''}`;
        return showOrWatch(
          { values, output },
          () => client.request<RolloutDetailView>('GET', path),
          statusText,
        );
      }
      case 'pause':
      case 'resume':
      case 'promote': {
        const appSet = expectName(rest, ACTION_USAGE);
        const reason = stringValue(values['reason']);
        if (!reason)
          throw new UsageError(`--reason is required (it goes to the audit log); usage: ${ACTION_USAGE}`);
        const view = await client.request<RolloutView>(
          'POST',
          `/api/v1/rollouts/${encodeURIComponent(appSet)}/${sub}`,
          { reason },
        );
        printResult(
          view,
          output,
          () => `Rollout of ${appSet} at ${shortSha(view.revision)}: ${view.status}. ${view.message}`,
        );
        return 0;
      }
      default:
        throw new UsageError(`unknown sub-command '${sub}'; expected list, status, pause, resume or promote`);
    }
  });
}

function stepLabel(r: RolloutView): string {
  return r.step ? `${r.step} (${r.stepIndex + 1}/${r.steps.length})` : '-';
}

/** A revision: shortened in the table, whole in the wide one. */
const revision = (sha: string | null, wide: boolean): string => (wide ? (sha ?? '-') : shortSha(sha));

const count = (map: Record<string, string>): string => String(Object.keys(map).length);

const ROLLOUT_COLUMNS: Column<RolloutView>[] = [
  { header: 'APPSET', cell: (r) => r.appSet },
  { header: 'REVISION', cell: (r, wide) => revision(r.revision, wide) },
  { header: 'STATUS', cell: (r) => r.status },
  { header: 'STEP', cell: stepLabel },
  { header: 'STARTED', cell: (r) => r.createdAt },
  { header: 'STEP STARTED', cell: (r) => r.stepStartedAt, wide: true },
  { header: 'RELEASED', cell: (r) => count(r.progress.released), wide: true },
  { header: 'FAILED', cell: (r) => count(r.progress.failed), wide: true },
  { header: 'SKIPPED', cell: (r) => count(r.progress.skipped), wide: true },
  { header: 'FINISHED', cell: (r) => r.finishedAt ?? '-', wide: true },
  { header: 'MESSAGE', cell: (r) => r.message },
];

export function listTable(list: RolloutView[], wide = false): string {
  return columnsTable(ROLLOUT_COLUMNS, list, wide);
}

type RolloutTarget = RolloutDetailView['targets'][number];

const TARGET_COLUMNS: Column<RolloutTarget>[] = [
  { header: 'TARGET', cell: (t) => t.name },
  { header: 'CLUSTER', cell: (t) => t.cluster },
  { header: 'DESIRED', cell: (t, wide) => revision(t.desiredRevision, wide), wide: true },
  { header: 'RELEASED', cell: (t, wide) => revision(t.releasedRevision, wide) },
  { header: 'RELEASED AT', cell: (t) => t.releasedAt ?? '-', wide: true },
  { header: 'SYNCED', cell: (t, wide) => revision(t.lastSyncedRevision, wide) },
  { header: 'HEALTH', cell: (t) => t.health },
  {
    header: 'NOTE',
    cell: (t, wide) => (t.pinnedAt ? `pinned ${revision(t.pinnedAt, wide)}` : (t.failed ?? t.skipped ?? '')),
  },
];

export function statusText(r: RolloutDetailView, wide = false): string {
  const head = formatFields([
    ['Appset', r.appSet],
    ['Revision', r.revision],
    ['Status', r.status],
    ['Step', stepLabel(r)],
    ['Why', r.message],
    ['Started', r.createdAt],
    ['Finished', r.finishedAt ?? '-'],
  ]);
  if (r.targets.length === 0) return head;
  return `${head}\n\n${columnsTable(TARGET_COLUMNS, r.targets, wide)}`;
}
