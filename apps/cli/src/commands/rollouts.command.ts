import { type CommandDescription } from '../command.js';
import type { RolloutDetailView, RolloutView } from '@flotilla/contract';
import { UsageError } from '../offline/offline-command.js';
import {
  expectName,
  expectPositionals,
  formatFields,
  formatTable,
  printResult,
  describeHubCommand,
  runHubCommand,
  showOrWatch,
  WATCH_OPTIONS,
  WATCH_USAGE,
  shortSha,
  stringValue,
  type HubCommandSpec,
} from './hub-command.js';

/** A rollout as the hub shows it: the list and the actions answer RolloutView, status the detail. */
export type { RolloutView };

const ACTION_USAGE = 'flotilla rollouts pause|resume|promote APPSET --reason TEXT';

const SPEC: HubCommandSpec = {
  name: 'rollouts',
  subcommands: ['list', 'status', 'pause', 'resume', 'promote'],
  usage: [
    'usage: flotilla rollouts [list] [--appset A] [--watch [--timeout S]]',
    '       flotilla rollouts status APPSET [--revision SHA] [--watch [--timeout S]]',
    `       ${ACTION_USAGE}`,
    '',
    'Fleet rollouts of appsets with a spec.rollout strategy. `status` shows the step, why the rollout',
    'waits, and every target: released, synced, health, pinned, failed or skipped (with the reason).',
    '`pause` stops releasing; `resume` continues; `promote` opens a manual gate (maxUnavailable 0) or',
    'moves past the current step without waiting. Every action needs --reason and is audited.',
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

function listTable(list: RolloutView[]): string {
  return formatTable(
    ['APPSET', 'REVISION', 'STATUS', 'STEP', 'STARTED', 'MESSAGE'],
    list.map((r) => [r.appSet, shortSha(r.revision), r.status, stepLabel(r), r.createdAt, r.message]),
  );
}

function statusText(r: RolloutDetailView): string {
  const head = formatFields([
    ['Appset', r.appSet],
    ['Revision', r.revision],
    ['Status', r.status],
    ['Step', stepLabel(r)],
    ['Why', r.message],
    ['Started', r.createdAt],
    ['Finished', r.finishedAt ?? '-'],
  ]);
  const targets = r.targets;
  if (targets.length === 0) return head;
  const rows = targets.map((t) => [
    t.name,
    t.cluster,
    shortSha(t.releasedRevision),
    shortSha(t.lastSyncedRevision),
    t.health,
    t.pinnedAt ? `pinned ${shortSha(t.pinnedAt)}` : (t.failed ?? t.skipped ?? ''),
  ]);
  return `${head}\n\n${formatTable(['TARGET', 'CLUSTER', 'RELEASED', 'SYNCED', 'HEALTH', 'NOTE'], rows)}`;
}
