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
    'reported: desired revision, sync status, health, and when it last synced.',
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

function targetTable(targets: TargetView[]): string {
  const rows = [...targets]
    .sort((a, b) => a.cluster.localeCompare(b.cluster) || a.name.localeCompare(b.name))
    .map((t) => [
      t.cluster,
      t.name,
      shortSha(t.desiredRevision),
      t.syncStatus,
      t.health ?? '-',
      age(t.lastSyncedAt),
    ]);
  return formatTable(['CLUSTER', 'TARGET', 'REVISION', 'SYNC', 'HEALTH', 'LAST SYNC'], rows);
}
