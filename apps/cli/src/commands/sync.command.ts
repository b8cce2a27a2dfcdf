import { z } from 'zod';
import { UsageError } from '../offline/offline-command.js';
import {
  expectName,
  formatFields,
  printResult,
  runHubCommand,
  stringValue,
  type HubCommandSpec,
} from './hub-command.js';

const operationSchema = z.object({
  id: z.string(),
  target: z.string(),
  prune: z.boolean(),
  /** Absent from hubs before dry runs. */
  dryRun: z.boolean().default(false),
  requestedBy: z.string(),
  reason: z.string(),
  state: z.string(),
  message: z.string(),
  createdAt: z.string(),
  expiresAt: z.string(),
  finishedAt: z.string().nullable(),
});
type Operation = z.infer<typeof operationSchema>;

const dryRunSchema = z.object({
  dryRun: z.boolean().optional(),
  startedAt: z.string(),
  resources: z.array(
    z.object({
      group: z.string(),
      kind: z.string(),
      namespace: z.string().optional(),
      name: z.string(),
      action: z.string(),
      message: z.string(),
    }),
  ),
});
type DryRun = z.infer<typeof dryRunSchema>;

const SPEC: HubCommandSpec = {
  name: 'sync',
  usage: [
    'usage: flotilla sync TARGET --reason TEXT [--prune] [--dry-run] [--expires-in-minutes N] [--wait [--timeout S]]',
    '',
    "Asks the target's agent to sync it now, once — also when the appset's automated sync is off",
    '(then the agent only compares and reports OutOfSync until someone syncs). An offline agent runs',
    'it when it is back, unless it expired (default 60 minutes). Windows that do not allow manual',
    'syncs refuse it (state Blocked). --wait follows it until the agent reported: exit 0 Succeeded,',
    '1 anything else.',
    '--dry-run asks the cluster what the sync would do (server-side apply dryRun=All) and changes',
    'nothing; with --wait it prints what would be created, changed and pruned.',
  ].join('\n'),
  options: {
    reason: { type: 'string' },
    prune: { type: 'boolean' },
    'dry-run': { type: 'boolean' },
    'expires-in-minutes': { type: 'string' },
    wait: { type: 'boolean' },
    timeout: { type: 'string' },
  },
};

export function run(argv: string[]): Promise<number> {
  return runHubCommand(argv, SPEC, async ({ values, positionals, output, client }) => {
    const target = expectName(positionals, 'flotilla sync TARGET --reason TEXT');
    const reason = stringValue(values['reason']);
    if (!reason?.trim())
      throw new UsageError('--reason is required (it goes to the audit log and the history)');
    const expires = stringValue(values['expires-in-minutes']);
    if (expires !== undefined && !/^[1-9]\d*$/.test(expires))
      throw new UsageError(`--expires-in-minutes must be a whole number of minutes, not '${expires}'`);
    const timeoutRaw = stringValue(values['timeout']);
    if (timeoutRaw !== undefined && values['wait'] !== true)
      throw new UsageError('--timeout applies to --wait');
    const timeout = timeoutRaw === undefined ? 300 : Number(timeoutRaw);
    if (!Number.isFinite(timeout) || timeout <= 0)
      throw new UsageError(`--timeout must be a positive number of seconds, not '${timeoutRaw}'`);
    const path = `/api/v1/targets/${encodeURIComponent(target)}`;
    let op = operationSchema.parse(
      await client.request('POST', `${path}/sync`, {
        reason,
        prune: values['prune'] === true,
        ...(values['dry-run'] === true && { dryRun: true }),
        ...(expires !== undefined && { expiresInMinutes: Number(expires) }),
      }),
    );
    if (values['wait'] === true) {
      const deadline = Date.now() + timeout * 1000;
      while (op.state === 'Pending' && Date.now() < deadline) {
        if (output === 'table') process.stderr.write('.');
        await new Promise((r) => setTimeout(r, 1000));
        const list = z.array(operationSchema).parse(await client.request('GET', `${path}/operations`));
        op = list.find((o) => o.id === op.id) ?? op;
      }
      if (output === 'table') process.stderr.write('\n');
    }
    if (op.dryRun && op.state !== 'Pending' && op.state !== 'Expired') {
      // The dry run's answer is its sync run: the newest dry run of the target since the request.
      const runs = z
        .object({ items: z.array(dryRunSchema) })
        .parse(
          await client.request('GET', `/api/v1/sync-runs?target=${encodeURIComponent(target)}&limit=20`),
        );
      const run = runs.items.find((r) => r.dryRun === true && r.startedAt >= op.createdAt);
      const result = { ...op, resources: run?.resources ?? [] };
      printResult(result, output, () => `${text(op)}\n\n${wouldDo(result.resources)}`);
      return op.state === 'Succeeded' ? 0 : 1;
    }
    printResult(op, output, () => text(op));
    return values['wait'] === true && op.state !== 'Succeeded' ? 1 : 0;
  });
}

function text(op: Operation): string {
  return formatFields([
    ['Operation', op.id],
    ['Target', op.target],
    ['State', op.state === 'Pending' ? 'Pending (the agent runs it on its next poll)' : op.state],
    ['Requested by', op.requestedBy],
    ['Reason', op.reason],
    ['Prune', op.prune ? 'yes' : 'as the appset says'],
    ...(op.dryRun ? ([['Dry run', 'yes: nothing is changed']] as [string, string][]) : []),
    ['Expires', op.expiresAt],
    ...(op.message ? ([['Message', op.message]] as [string, string][]) : []),
  ]);
}

/** One line per object: what the sync would do to it, as the cluster answered the dry run. */
function wouldDo(resources: DryRun['resources']): string {
  if (resources.length === 0) return 'Nothing to do.';
  const verb = (r: DryRun['resources'][number]): string =>
    r.action === 'applied'
      ? r.message.startsWith('would be created')
        ? 'create'
        : 'change'
      : r.action === 'pruned'
        ? 'prune'
        : r.action === 'unchanged'
          ? 'unchanged'
          : 'fail';
  return resources
    .map((r) => {
      const what = `${r.group ? `${r.group}/` : ''}${r.kind} ${r.namespace ? `${r.namespace}/` : ''}${r.name}`;
      return `${verb(r).padEnd(9)}  ${what}${r.action === 'failed' ? `: ${r.message}` : ''}`;
    })
    .join('\n');
}
