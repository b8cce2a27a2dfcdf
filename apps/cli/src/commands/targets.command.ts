import { type TargetView } from '../fleet/hub-client.js';
import {
  age,
  expectPositionals,
  formatTable,
  printResult,
  runHubCommand,
  shortSha,
  stringValue,
  type HubCommandSpec,
} from './hub-command.js';

const SPEC: HubCommandSpec = {
  name: 'targets',
  usage: [
    'usage: flotilla targets [--cluster C] [--appset A]',
    '',
    'What each cluster should run (one target per ApplicationSet and cluster) and what its agent last',
    'reported: desired revision, sync status, health, when it last synced, and the one current reason it is',
    'not Synced and Healthy at the revision Git wants (`flotilla explain` gives the long answer).',
  ].join('\n'),
  options: {
    cluster: { type: 'string' },
    appset: { type: 'string' },
  },
};

export function run(argv: string[]): Promise<number> {
  return runHubCommand(argv, SPEC, async ({ values, positionals, output, client }) => {
    expectPositionals(positionals, [], 'flotilla targets [--cluster C] [--appset A]');
    const targets = await client.targets({
      cluster: stringValue(values['cluster']),
      appSet: stringValue(values['appset']),
    });
    printResult(targets, output, () => targetTable(targets));
    return 0;
  });
}

/** Long enough for a window's name and when it opens; `-o json` and `explain` carry the whole text. */
const REASON_MESSAGE_WIDTH = 72;

/** `Code: message`, the message cut to one short line; `-` when the target has no reason. */
export function reasonCell(reason: TargetView['reason']): string {
  if (!reason) return '-';
  const message = reason.message.replace(/\s+/g, ' ').trim();
  if (!message) return reason.code;
  const short =
    message.length > REASON_MESSAGE_WIDTH
      ? `${message.slice(0, REASON_MESSAGE_WIDTH - 1).trimEnd()}…`
      : message;
  return `${reason.code}: ${short}`;
}

export function targetTable(targets: TargetView[]): string {
  const rows = [...targets]
    .sort((a, b) => a.cluster.localeCompare(b.cluster) || a.name.localeCompare(b.name))
    .map((t) => [
      t.cluster,
      t.name,
      shortSha(t.desiredRevision),
      t.syncStatus,
      t.health ?? '-',
      age(t.lastSyncedAt),
      // Last: the only cell of free text, so the columns before it stay aligned.
      reasonCell(t.reason),
    ]);
  return formatTable(['CLUSTER', 'TARGET', 'REVISION', 'SYNC', 'HEALTH', 'LAST SYNC', 'REASON'], rows);
}
