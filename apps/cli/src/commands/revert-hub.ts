// `flotilla revert --hub`: the hub writes the revert on a branch and opens the pull request.
import { revertViewSchema, type RevertView } from '@flotilla/contract';
import { stringify } from 'yaml';
import { HubApiError } from '../fleet/hub-client.js';
import { UsageError } from '../offline/offline-command.js';
import { connectHub, describeApiError, type HubArgValue } from './hub-command.js';

/** What only the offline revert reads: at the hub, its mirrors, inventory and render stand for them. */
const OFFLINE_ONLY = [
  'fleet',
  'path',
  'repo',
  'clusters',
  'kube-version',
  'api-versions',
  'dry-run',
] as const;

export interface HubRevertValues extends Record<string, HubArgValue> {
  appset?: string;
  target?: string;
  to?: string;
  reason?: string;
}

/** Asks the hub for the revert (POST /api/v1/{targets|appsets}/:name/revert) and prints what it opened. */
export async function revertAtHub(values: HubRevertValues, output: string): Promise<string> {
  const offline = OFFLINE_ONLY.find((flag) => values[flag] !== undefined);
  if (offline !== undefined)
    throw new UsageError(`--${offline} is for an offline revert; with --hub the hub reads its own mirror`);
  if ((values.appset === undefined) === (values.target === undefined))
    throw new UsageError('revert --hub needs one of --appset A or --target T');
  const path =
    values.target !== undefined
      ? `/api/v1/targets/${encodeURIComponent(values.target)}/revert`
      : `/api/v1/appsets/${encodeURIComponent(values.appset ?? '')}/revert`;
  const body = {
    ...(values.to !== undefined && { to: values.to }),
    ...(values.reason !== undefined && { reason: values.reason }),
  };
  const { client } = connectHub(values);
  let answer: unknown;
  try {
    answer = await client.request<unknown>('POST', path, body);
  } catch (err) {
    if (err instanceof HubApiError) throw new Error(describeApiError(err), { cause: err });
    throw err;
  }
  const view = revertViewSchema.parse(answer);
  if (output === 'json') return `${JSON.stringify(view)}\n`;
  if (output === 'yaml') return stringify(view);
  return table(view);
}

function table(v: RevertView): string {
  const what = v.target === null ? `appset ${v.appSet}` : `target ${v.target} (appset ${v.appSet})`;
  const lines = [
    `${v.alreadyOpen ? 'already open' : 'opened'}: ${v.pullRequest.url} (branch ${v.branch})`,
    `${v.commits.length} commit${v.commits.length === 1 ? '' : 's'} since ${v.to.slice(0, 12)} changed what ${what} renders:`,
    ...v.commits.map((c) => `  ${c.commit.slice(0, 12)} ${c.subject}`),
  ];
  if (v.pins.length > 0)
    lines.push(
      `replaces the pin${v.pins.length === 1 ? '' : 's'} of ${v.pins.map((p) => p.target).join(', ')}: lifted once Git renders ${v.to.slice(0, 12)} again`,
    );
  if (v.restores === false)
    lines.push(
      `${what} still differs from ${v.to.slice(0, 12)} after the revert (later commits build on the reverted ones)`,
    );
  return `${lines.join('\n')}\n`;
}
