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
  requestedBy: z.string(),
  reason: z.string(),
  state: z.string(),
  message: z.string(),
  createdAt: z.string(),
  expiresAt: z.string(),
  finishedAt: z.string().nullable(),
});
type Operation = z.infer<typeof operationSchema>;

const SPEC: HubCommandSpec = {
  name: 'sync',
  usage: [
    'usage: flotilla sync TARGET --reason TEXT [--prune] [--expires-in-minutes N] [--wait [--timeout S]]',
    '',
    "Asks the target's agent to sync it now, once — also when the appset's automated sync is off",
    '(then the agent only compares and reports OutOfSync until someone syncs). An offline agent runs',
    'it when it is back, unless it expired (default 60 minutes). Windows that do not allow manual',
    'syncs refuse it (state Blocked). --wait follows it until the agent reported: exit 0 Succeeded,',
    '1 anything else.',
  ].join('\n'),
  options: {
    reason: { type: 'string' },
    prune: { type: 'boolean' },
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
    ['Expires', op.expiresAt],
    ...(op.message ? ([['Message', op.message]] as [string, string][]) : []),
  ]);
}
