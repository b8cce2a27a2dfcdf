import { type CommandDescription } from '../command.js';
import { z } from 'zod';
import { UsageError } from '../offline/offline-command.js';
import type { HubClient } from '../fleet/hub-client.js';
import { startProgress } from '../progress/progress.js';
import {
  expectName,
  formatFields,
  formatTable,
  parseSelector,
  printResult,
  describeHubCommand,
  runHubCommand,
  stringValue,
  stringValues,
  type HubArgValue,
  type HubCommandSpec,
} from './hub-command.js';

const operationSchema = z.object({
  id: z.string(),
  target: z.string(),
  prune: z.boolean(),
  /** Absent from hubs before dry runs. */
  dryRun: z.boolean().default(false),
  /** Absent from hubs before syncs of many targets. */
  batchId: z.string().nullable().default(null),
  requestedBy: z.string(),
  reason: z.string(),
  state: z.string(),
  message: z.string(),
  createdAt: z.string(),
  expiresAt: z.string(),
  finishedAt: z.string().nullable(),
  /** Absent from hubs before per-run options. */
  force: z.boolean().default(false),
  syncOptions: z.array(z.string()).default([]),
  revision: z.string().nullable().default(null),
  resources: z
    .array(
      z.object({ group: z.string(), kind: z.string(), namespace: z.string().optional(), name: z.string() }),
    )
    .default([]),
  /** Absent from hubs before terminate. */
  terminate: z
    .object({ requestedBy: z.string(), reason: z.string(), requestedAt: z.string() })
    .nullable()
    .default(null),
});
type Operation = z.infer<typeof operationSchema>;

const dryRunSchema = z.object({
  dryRun: z.boolean().optional(),
  /** Absent from hubs before runs carried the operation id. */
  operationId: z.string().optional(),
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

const bulkSchema = z.object({
  batchId: z.string().nullable(),
  preview: z.boolean(),
  targets: z.array(z.string()),
  operations: z.array(operationSchema),
  skipped: z.array(z.object({ target: z.string(), reason: z.string() })),
});
type Bulk = z.infer<typeof bulkSchema>;

const SPEC: HubCommandSpec = {
  name: 'sync',
  usage: [
    'usage: flotilla sync TARGET --reason TEXT [--prune] [--dry-run] [--force] [--sync-option K=V]...',
    '                            [--revision SHA] [--resource GROUP/KIND/NAMESPACE/NAME]...',
    '                            [--expires-in-minutes N] [--wait [--timeout S]]',
    '       flotilla sync --appset A [--selector k=v,...] --reason TEXT [--preview] [options as above]',
    '       flotilla sync --selector k=v,... --reason TEXT [--preview] [options as above]',
    '       flotilla sync --cancel OPERATION --reason TEXT',
    '       flotilla sync --terminate OPERATION --reason TEXT [--wait [--timeout S]]',
    '',
    "Asks the target's agent to sync it now, once — also when the appset's automated sync is off",
    '(then the agent only compares and reports OutOfSync until someone syncs). An offline agent runs',
    'it when it is back, unless it expired (default 60 minutes). Windows that do not allow manual',
    'syncs refuse it (state Blocked). --wait follows it until the agent reported: exit 0 Succeeded,',
    '1 anything else.',
    '--dry-run asks the cluster what the sync would do (server-side apply dryRun=All) and changes',
    'nothing; with --wait it prints what would be created, changed and pruned.',
    "--sync-option K=V (repeatable) sets a sync option for this run only, as an appset's syncOptions",
    '(Replace=true, ServerSideApply=false, Validate=false, PruneLast=true, …); --force is Force=true.',
    '--revision names the revision to sync: only the one the target is assigned is accepted (pin the',
    'target to sync another it ran). --resource (repeatable) syncs only those declared objects: no',
    'hooks, no prune, no waves (group empty for the core group, namespace empty for cluster-scoped).',
    '--appset and/or --selector (cluster labels, all must hold) ask every matching target at once, in',
    'one request: all are asked or none; --preview lists them and asks none.',
    '--cancel withdraws a request its agent has not started (a run already going finishes).',
    '--terminate stops a request its agent may be running, at its next safe point (before the next',
    'object, or while it waits for a wave or a hook); the run is reported Terminated with what it',
    'applied. --wait follows it until the agent reported: exit 0 Terminated, 1 anything else.',
  ].join('\n'),
  options: {
    reason: { type: 'string' },
    prune: { type: 'boolean' },
    'dry-run': { type: 'boolean' },
    'expires-in-minutes': { type: 'string' },
    wait: { type: 'boolean' },
    timeout: { type: 'string' },
    appset: { type: 'string' },
    // The old spelling, still accepted with a warning: --appset is the one spelling of every command.
    'app-set': { type: 'string', deprecated: 'appset' },
    selector: { type: 'string' },
    preview: { type: 'boolean' },
    cancel: { type: 'string' },
    terminate: { type: 'string' },
    force: { type: 'boolean' },
    'sync-option': { type: 'string', multiple: true },
    revision: { type: 'string' },
    resource: { type: 'string', multiple: true },
  },
  apiFields: {
    reason: 'reason',
    appSet: 'appset',
    clusterSelector: 'selector',
    expiresInMinutes: 'expires-in-minutes',
    syncOptions: 'sync-option',
    revision: 'revision',
    resources: 'resource',
  },
};

export const describe: CommandDescription = describeHubCommand(SPEC);

export function run(argv: string[]): Promise<number> {
  return runHubCommand(argv, SPEC, async ({ values, positionals, output, client }) => {
    const reason = stringValue(values['reason']);
    if (!reason?.trim())
      throw new UsageError('--reason is required (it goes to the audit log and the history)');
    const cancel = stringValue(values['cancel']);
    if (cancel !== undefined) {
      if (positionals.length > 0) throw new UsageError('--cancel takes an operation id, not a target');
      const op = operationSchema.parse(
        await client.request('POST', `/api/v1/operations/${encodeURIComponent(cancel)}/cancel`, { reason }),
      );
      printResult(op, output, () => text(op));
      return 0;
    }
    const terminate = stringValue(values['terminate']);
    if (terminate !== undefined) {
      if (positionals.length > 0) throw new UsageError('--terminate takes an operation id, not a target');
      let op = operationSchema.parse(
        await client.request('POST', `/api/v1/operations/${encodeURIComponent(terminate)}/terminate`, {
          reason,
        }),
      );
      if (values['wait'] === true) op = await waitOne(client, op, deadlineOf(values), output);
      printResult(op, output, () => text(op));
      return values['wait'] === true && op.state !== 'Terminated' ? 1 : 0;
    }
    const appSet = stringValue(values['appset']);
    const selector = parseSelector(stringValue(values['selector']));
    const expires = stringValue(values['expires-in-minutes']);
    if (expires !== undefined && !/^[1-9]\d*$/.test(expires))
      throw new UsageError(`--expires-in-minutes must be a whole number of minutes, not '${expires}'`);
    const syncOptions = stringValues(values['sync-option']);
    const request = {
      reason,
      prune: values['prune'] === true,
      ...(values['dry-run'] === true && { dryRun: true }),
      ...(values['force'] === true && { force: true }),
      ...(syncOptions.length > 0 && { syncOptions }),
      ...(expires !== undefined && { expiresInMinutes: Number(expires) }),
    };
    const revision = stringValue(values['revision']);
    const resources = stringValues(values['resource']).map(resourceRef);
    const deadline = deadlineOf(values);

    if (appSet !== undefined || selector !== undefined) {
      if (positionals.length > 0)
        throw new UsageError('name a TARGET or select with --appset/--selector, not both');
      if (revision !== undefined || resources.length > 0)
        throw new UsageError(
          "--revision and --resource name one target's revision and objects: give a TARGET",
        );
      if (values['preview'] === true && values['wait'] === true)
        throw new UsageError('--wait does not apply to --preview (nothing is asked)');
      let bulk = bulkSchema.parse(
        await client.request('POST', '/api/v1/targets/sync', {
          ...request,
          ...(appSet !== undefined && { appSet }),
          ...(selector && { clusterSelector: selector }),
          ...(values['preview'] === true && { preview: true }),
        }),
      );
      if (values['wait'] === true)
        bulk = { ...bulk, operations: await waitAll(client, bulk, deadline, output) };
      printResult(bulk, output, () => bulkText(bulk));
      return values['wait'] === true && bulk.operations.some((o) => o.state !== 'Succeeded') ? 1 : 0;
    }
    if (values['preview'] === true) throw new UsageError('--preview applies to --appset or --selector');

    const target = expectName(positionals, 'flotilla sync TARGET --reason TEXT');
    const path = `/api/v1/targets/${encodeURIComponent(target)}`;
    let op = operationSchema.parse(
      await client.request('POST', `${path}/sync`, {
        ...request,
        ...(revision !== undefined && { revision }),
        ...(resources.length > 0 && { resources }),
      }),
    );
    if (values['wait'] === true) op = await waitOne(client, op, deadline, output);
    if (op.dryRun && op.state !== 'Pending' && op.state !== 'Expired') {
      // The dry run's answer is the run that carried out this very request (its operation id), not
      // whichever dry run of the target came first after it: two people may dry-run one target.
      const query = `target=${encodeURIComponent(target)}&operation=${encodeURIComponent(op.id)}&limit=1`;
      const runs = z
        .object({ items: z.array(dryRunSchema) })
        .parse(await client.request('GET', `/api/v1/sync-runs?${query}`));
      const run = runs.items.find((r) => r.operationId === op.id);
      const result = { ...op, resources: run?.resources ?? [] };
      printResult(result, output, () => `${text(op)}\n\n${wouldDo(result.resources)}`);
      return op.state === 'Succeeded' ? 0 : 1;
    }
    printResult(op, output, () => text(op));
    return values['wait'] === true && op.state !== 'Succeeded' ? 1 : 0;
  });
}

/** `GROUP/KIND/NAMESPACE/NAME` (group empty for the core group, namespace empty for cluster-scoped). */
function resourceRef(raw: string): { group: string; kind: string; namespace?: string; name: string } {
  const parts = raw.split('/');
  const [group, kind, namespace, name] = parts;
  if (parts.length !== 4 || !kind || !name)
    throw new UsageError(
      `--resource must be GROUP/KIND/NAMESPACE/NAME (e.g. apps/Deployment/web/api, /ConfigMap/web/settings, /Namespace//web), not '${raw}'`,
    );
  return { group: group ?? '', kind, ...(namespace ? { namespace } : {}), name };
}

/** When --wait gives up (--timeout seconds, default 300). */
function deadlineOf(values: Record<string, HubArgValue>): number {
  const timeoutRaw = stringValue(values['timeout']);
  if (timeoutRaw !== undefined && values['wait'] !== true)
    throw new UsageError('--timeout applies to --wait');
  const timeout = timeoutRaw === undefined ? 300 : Number(timeoutRaw);
  if (!Number.isFinite(timeout) || timeout <= 0)
    throw new UsageError(`--timeout must be a positive number of seconds, not '${timeoutRaw}'`);
  return Date.now() + timeout * 1000;
}

/** Follows one operation (a request a second) until it is no longer Pending or the deadline passes. */
async function waitOne(
  client: HubClient,
  op: Operation,
  deadline: number,
  output: string,
): Promise<Operation> {
  const path = `/api/v1/targets/${encodeURIComponent(op.target)}/operations`;
  const asked = op.terminate ? 'to stop' : op.dryRun ? 'to dry-run' : 'to sync';
  const progress = startProgress(`waiting for the agent of ${op.target} ${asked} it (${op.id})`, output);
  let current = op;
  while (current.state === 'Pending' && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 1000));
    const list = z.array(operationSchema).parse(await client.request('GET', path));
    current = list.find((o) => o.id === op.id) ?? current;
  }
  const ended = current.state === 'Pending' ? 'still Pending: --timeout reached' : current.state;
  progress.done(`${op.target}: ${ended}`, current.state === (op.terminate ? 'Terminated' : 'Succeeded'));
  return current;
}

/** Follows a batch (one request a second, whatever its size) until none is Pending or the deadline passes. */
async function waitAll(
  client: HubClient,
  bulk: Bulk,
  deadline: number,
  output: string,
): Promise<Operation[]> {
  let ops = bulk.operations;
  const batch = `/api/v1/operations?batchId=${encodeURIComponent(bulk.batchId ?? '')}`;
  const reported = () => `${ops.filter((o) => o.state !== 'Pending').length}/${ops.length} targets reported`;
  const progress = startProgress(`waiting for the agents: ${reported()}`, output);
  while (ops.some((o) => o.state === 'Pending') && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 1000));
    ops = z.array(operationSchema).parse(await client.request('GET', batch));
    progress.update(`waiting for the agents: ${reported()}`);
  }
  progress.done(
    reported(),
    ops.every((o) => o.state === 'Succeeded'),
  );
  return ops;
}

function bulkText(bulk: Bulk): string {
  const head = bulk.preview
    ? `Would ask ${bulk.targets.length} target(s) to sync (preview: nothing was asked).`
    : `Asked ${bulk.operations.length} target(s) to sync (batch ${bulk.batchId ?? '-'}).`;
  const rows = bulk.preview
    ? bulk.targets.map((t) => [t, 'would be asked', ''])
    : bulk.operations.map((o) => [o.target, o.state, o.id]);
  const skipped = bulk.skipped.map((s) => [s.target, 'skipped', s.reason]);
  return `${head}\n\n${formatTable(['TARGET', 'STATE', 'OPERATION OR WHY'], [...rows, ...skipped])}`;
}

function text(op: Operation): string {
  return formatFields([
    ['Operation', op.id],
    ['Target', op.target],
    ['State', op.state === 'Pending' ? 'Pending (the agent runs it on its next poll)' : op.state],
    ...(op.batchId ? ([['Batch', op.batchId]] as [string, string][]) : []),
    ['Requested by', op.requestedBy],
    ['Reason', op.reason],
    ['Prune', op.prune ? 'yes' : 'as the appset says'],
    ...(op.revision ? ([['Revision', op.revision]] as [string, string][]) : []),
    ...(op.force || op.syncOptions.length > 0
      ? ([['Sync options', [...(op.force ? ['Force=true'] : []), ...op.syncOptions].join(', ')]] as [
          string,
          string,
        ][])
      : []),
    ...(op.resources.length > 0
      ? ([
          [
            'Resources',
            op.resources.map((r) => `${r.group}/${r.kind}/${r.namespace ?? ''}/${r.name}`).join(', '),
          ],
        ] as [string, string][])
      : []),
    ...(op.dryRun ? ([['Dry run', 'yes: nothing is changed']] as [string, string][]) : []),
    ...(op.terminate
      ? ([
          [
            'Terminate',
            `asked by ${op.terminate.requestedBy} at ${op.terminate.requestedAt}: ${op.terminate.reason}`,
          ],
        ] as [string, string][])
      : []),
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
