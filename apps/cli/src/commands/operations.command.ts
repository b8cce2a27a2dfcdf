import { targetOperationListSchema, type TargetOperationView } from '@flotilla/contract';
import { type CommandDescription } from '../command.js';
import { UsageError } from '../offline/offline-command.js';
import {
  age,
  columnsTable,
  describeHubCommand,
  expectName,
  expectPositionals,
  printResult,
  runHubCommand,
  shortSha,
  stringValue,
  type Column,
  type HubCommandSpec,
} from './hub-command.js';

const LIST_USAGE = 'flotilla operations list TARGET | flotilla operations list --batch ID';

const SPEC: HubCommandSpec = {
  name: 'operations',
  subcommands: ['list', 'cancel', 'terminate'],
  listings: ['list'],
  usage: [
    `usage: ${LIST_USAGE}`,
    '       flotilla operations cancel OPERATION --reason TEXT',
    '       flotilla operations terminate OPERATION --reason TEXT [--wait [--timeout S]]',
    '',
    "The syncs people asked for (flotilla sync): a target's, newest first (at most 100), or those of one",
    'request for many targets (--batch, the batch id `flotilla sync --appset` prints), with their state:',
    'Pending, Succeeded, Failed, Partial, Blocked, Terminated, Expired or Cancelled. `cancel` withdraws a',
    'request its agent has not started; `terminate` stops one it may be running, at its next safe point',
    '(as flotilla sync --cancel / --terminate). -o wide adds the batch, dry run, revision and expiry.',
  ].join('\n'),
  options: {
    batch: { type: 'string' },
    reason: { type: 'string' },
    wait: { type: 'boolean' },
    timeout: { type: 'string' },
  },
  apiFields: { batchId: 'batch', reason: 'reason' },
};

export const describe: CommandDescription = describeHubCommand(SPEC);

export async function run(argv: string[]): Promise<number> {
  const [sub, ...rest] = argv;
  // Stopping a request is `flotilla sync`'s: one implementation of --cancel, --terminate and --wait.
  if (sub === 'cancel' || sub === 'terminate') {
    const id = rest[0] !== undefined && !rest[0].startsWith('-') ? rest.shift() : undefined;
    if (id === undefined)
      return runHubCommand(argv, SPEC, () => {
        throw new UsageError(`missing OPERATION; usage: flotilla operations ${sub} OPERATION --reason TEXT`);
      });
    return (await import('./sync.command.js')).run([`--${sub}`, id, ...rest]);
  }
  return runHubCommand(argv, SPEC, async ({ values, positionals, output, client }) => {
    const [command = 'list', ...names] = positionals;
    if (command !== 'list')
      throw new UsageError(`unknown sub-command '${command}'; expected list, cancel or terminate`);
    if (values['wait'] !== undefined || values['timeout'] !== undefined || values['reason'] !== undefined)
      throw new UsageError(`--reason, --wait and --timeout apply to 'operations cancel|terminate' only`);
    const batch = stringValue(values['batch']);
    let path: string;
    if (batch !== undefined) {
      expectPositionals(names, [], LIST_USAGE);
      path = `/api/v1/operations?batchId=${encodeURIComponent(batch)}`;
    } else {
      path = `/api/v1/targets/${encodeURIComponent(expectName(names, LIST_USAGE))}/operations`;
    }
    const operations = targetOperationListSchema.parse(await client.request('GET', path));
    printResult(operations, output, (wide) => operationTable(operations, wide));
    return 0;
  });
}

const OPERATION_COLUMNS: Column<TargetOperationView>[] = [
  { header: 'OPERATION', cell: (o) => o.id },
  { header: 'TARGET', cell: (o) => o.target },
  { header: 'KIND', cell: (o) => o.kind },
  {
    header: 'STATE',
    cell: (o) => (o.terminate && o.state === 'Pending' ? 'Pending (terminating)' : o.state),
  },
  { header: 'REQUESTED BY', cell: (o) => o.requestedBy },
  { header: 'AGE', cell: (o) => age(o.createdAt) },
  { header: 'BATCH', cell: (o) => o.batchId ?? '-', wide: true },
  { header: 'DRY RUN', cell: (o) => (o.dryRun ? 'yes' : 'no'), wide: true },
  { header: 'REVISION', cell: (o, wide) => (wide ? (o.revision ?? '-') : shortSha(o.revision)), wide: true },
  { header: 'EXPIRES', cell: (o) => o.expiresAt, wide: true },
  { header: 'FINISHED', cell: (o) => o.finishedAt ?? '-', wide: true },
  { header: 'REASON', cell: (o) => o.reason.replace(/\s*\n\s*/g, ' ') },
  { header: 'MESSAGE', cell: (o) => o.message.replace(/\s*\n\s*/g, ' ') || '-' },
];

export function operationTable(operations: TargetOperationView[], wide = false): string {
  return columnsTable(OPERATION_COLUMNS, operations, wide);
}
