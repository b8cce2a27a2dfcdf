import { type CommandDescription } from '../command.js';
import { type TargetDeletionView } from '@flotilla/contract';
import { type TargetView } from '../fleet/hub-client.js';
import { UsageError } from '../offline/offline-command.js';
import {
  age,
  columnsTable,
  expectName,
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

const DELETE_USAGE = 'flotilla targets delete TARGET --cascade --reason TEXT';

const SPEC: HubCommandSpec = {
  name: 'targets',
  subcommands: ['delete'],
  listings: [''],
  usage: [
    'usage: flotilla targets [--cluster C] [--appset A] [--watch [--timeout S]]',
    `       ${DELETE_USAGE}`,
    '',
    'What each cluster should run (one target per ApplicationSet and cluster) and what its agent last',
    'reported: desired revision, sync status, health, when it last synced, and the one current reason it is',
    'not Synced and Healthy at the revision Git wants (`flotilla explain` gives the long answer).',
    '-o wide adds the appset, namespace, whole commits (desired, released, last synced), the pin, when',
    'the agent last reported and since when it is offline (stale).',
    '',
    'delete: the target is deleted with its objects (admin). Its agent runs the PreDelete hooks, deletes',
    'what the target tracks (Delete=false and helm.sh/resource-policy: keep stay), runs PostDelete hooks',
    'and reports; then the target leaves the hub. --cascade says so explicitly; --reason is audited.',
    '',
    WATCH_USAGE,
  ].join('\n'),
  options: {
    cluster: { type: 'string' },
    appset: { type: 'string' },
    cascade: { type: 'boolean' },
    reason: { type: 'string' },
    ...WATCH_OPTIONS,
  },
};

export const describe: CommandDescription = describeHubCommand(SPEC);

export function run(argv: string[]): Promise<number> {
  return runHubCommand(argv, SPEC, async ({ values, positionals, output, client }) => {
    if (positionals[0] === 'delete') {
      if (values['watch'] !== undefined || values['timeout'] !== undefined)
        throw new UsageError(`--watch and --timeout apply to the listing, not to: ${DELETE_USAGE}`);
      const name = expectName(positionals.slice(1), DELETE_USAGE);
      if (values['cascade'] !== true)
        throw new UsageError(
          `--cascade is required: the target's objects are deleted from its cluster (to leave them, remove the target from its appset); usage: ${DELETE_USAGE}`,
        );
      const reason = stringValue(values['reason']);
      if (!reason)
        throw new UsageError(`--reason is required (it goes to the audit log); usage: ${DELETE_USAGE}`);
      const deletion = await client.request<TargetDeletionView>(
        'POST',
        `/api/v1/targets/${encodeURIComponent(name)}/delete`,
        { cascade: true, reason },
      );
      printResult(deletion, output, () =>
        deletion.state === 'Deleted'
          ? `target ${deletion.target} deleted (never released to its cluster: nothing to delete there)`
          : `target ${deletion.target} is being deleted by its agent (deletion ${deletion.deletionId}); \`flotilla targets\` shows Deleting until it reports`,
      );
      return 0;
    }
    if (values['cascade'] !== undefined || values['reason'] !== undefined)
      throw new UsageError(`--cascade and --reason belong to: ${DELETE_USAGE}`);
    expectPositionals(positionals, [], 'flotilla targets [--cluster C] [--appset A]');
    const filter = { cluster: stringValue(values['cluster']), appSet: stringValue(values['appset']) };
    return showOrWatch({ values, output }, () => client.targets(filter), targetTable);
  });
}

/** Long enough for a window's name and when it opens; `-o json` and `explain` carry the whole text. */
const REASON_MESSAGE_WIDTH = 72;

/** `Code: message`, the message cut to one short line; `-` when the target has no reason. */
/** `undefined`: a hub older than the reason field sends none. */
export function reasonCell(reason: TargetView['reason'] | undefined): string {
  if (!reason) return '-';
  const message = reason.message.replace(/\s+/g, ' ').trim();
  if (!message) return reason.code;
  const short =
    message.length > REASON_MESSAGE_WIDTH
      ? `${message.slice(0, REASON_MESSAGE_WIDTH - 1).trimEnd()}…`
      : message;
  return `${reason.code}: ${short}`;
}

/** A revision: shortened in the table, whole (every source's) in the wide one. */
const revision = (sha: string | null, wide: boolean): string => (wide ? (sha ?? '-') : shortSha(sha));

/** Since when the cluster's agent is offline, when it is: its sync and health are its last word. */
function staleCell(stale: TargetView['stale']): string {
  if (!stale) return '-';
  return stale.lastSeenAt ? `offline ${age(stale.lastSeenAt)}` : 'never seen';
}

const TARGET_COLUMNS: Column<TargetView>[] = [
  { header: 'CLUSTER', cell: (t) => t.cluster },
  { header: 'TARGET', cell: (t) => t.name },
  { header: 'APPSET', cell: (t) => t.appSet, wide: true },
  { header: 'NAMESPACE', cell: (t) => t.namespace, wide: true },
  { header: 'REVISION', cell: (t, wide) => revision(t.desiredRevision, wide) },
  { header: 'RELEASED', cell: (t, wide) => revision(t.releasedRevision, wide), wide: true },
  { header: 'SYNCED', cell: (t, wide) => revision(t.lastSyncedRevision, wide), wide: true },
  {
    header: 'PIN',
    cell: (t) => (t.pin ? `${t.pin.revision} by ${t.pin.actor}` : '-'),
    wide: true,
  },
  // An offline agent's last word is not what runs now: never shown as if it were.
  { header: 'SYNC', cell: (t) => (t.stale ? `${t.syncStatus} (stale)` : t.syncStatus) },
  { header: 'HEALTH', cell: (t) => (t.stale ? `${t.health ?? '-'} (stale)` : (t.health ?? '-')) },
  { header: 'LAST SYNC', cell: (t) => age(t.lastSyncedAt) },
  { header: 'LAST REPORT', cell: (t) => age(t.lastReportAt), wide: true },
  { header: 'STALE', cell: (t) => staleCell(t.stale), wide: true },
  // Last: the only cell of free text, so the columns before it stay aligned.
  { header: 'REASON', cell: (t) => reasonCell(t.reason) },
];

export function targetTable(targets: TargetView[], wide = false): string {
  const sorted = [...targets].sort(
    (a, b) => a.cluster.localeCompare(b.cluster) || a.name.localeCompare(b.name),
  );
  return columnsTable(TARGET_COLUMNS, sorted, wide);
}
