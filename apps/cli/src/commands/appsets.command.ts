import {
  apiErrorSchema,
  expansionOutcomeViewSchema,
  expansionPreviewViewSchema,
  type ApiError,
  type ExpansionPreviewView,
} from '@flotilla/contract';
import { type CommandDescription } from '../command.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { type AppSetView, type HubClient } from '../fleet/hub-client.js';
import { readOneDocument, UsageError } from '../offline/offline-command.js';
import { startProgress } from '../progress/progress.js';
import {
  age,
  columnsTable,
  expectName,
  expectPositionals,
  formatFields,
  formatTable,
  printResult,
  describeHubCommand,
  runHubCommand,
  shortSha,
  stringValue,
  type Column,
  type HubCommandSpec,
} from './hub-command.js';

const SPEC: HubCommandSpec = {
  name: 'appsets',
  subcommands: ['list', 'get', 'apply', 'refresh', 'delete', 'preview', 'confirm-expansion'],
  listings: ['', 'list'],
  usage: [
    'usage: flotilla appsets [list]',
    '       flotilla appsets get NAME',
    '       flotilla appsets apply -f FILE [--wait] [--timeout SECONDS]',
    '       flotilla appsets delete NAME',
    '       flotilla appsets refresh NAME [--hard] [--reason TEXT]',
    '       flotilla appsets preview NAME | -f FILE',
    '       flotilla appsets confirm-expansion NAME --inputs-hash HASH --reason TEXT',
    '',
    "The hub's ApplicationSets. `apply` creates or replaces one from a YAML or JSON file (Flotilla's",
    "form or Argo CD's argoproj.io/v1alpha1) and prints whether it was created or updated and its",
    'status; with --wait it waits until the hub has expanded it (exit 1 if the expansion failed).',
    '`refresh` evaluates it again now; --hard first fetches every Git repository it reads (as a',
    'push webhook would), for a hub whose webhooks are not set up or a commit it has not seen yet.',
    '`preview` expands a stored appset, or a document from a file, and stores nothing: its targets, what',
    'would be created, updated, moved and deleted, and whether the deletion guard would hold it.',
    '`confirm-expansion` lets through an expansion the guard holds (its inputs hash, from `get -o json`',
    'pendingExpansion.inputsHash, or from preview), as it was computed; --reason goes to the audit log.',
    '`list -o wide` adds the project, the API version, where it is managed (api, or git with the fleet',
    "repository's file and commit) and when it last changed.",
  ].join('\n'),
  options: {
    file: { type: 'string', short: 'f' },
    wait: { type: 'boolean' },
    timeout: { type: 'string' },
    hard: { type: 'boolean' },
    reason: { type: 'string' },
    'inputs-hash': { type: 'string' },
  },
  apiFields: { inputsHash: 'inputs-hash', reason: 'reason' },
};

export const describe: CommandDescription = describeHubCommand(SPEC);

const DEFAULT_WAIT_SECONDS = 60;

export function run(argv: string[]): Promise<number> {
  return runHubCommand(argv, SPEC, async ({ values, positionals, output, client }) => {
    const [sub = 'list', ...rest] = positionals;
    if (sub !== 'apply' && ['wait', 'timeout'].some((k) => values[k] !== undefined)) {
      throw new UsageError(`--wait and --timeout apply to 'appsets apply' only`);
    }
    if (sub !== 'apply' && sub !== 'preview' && values['file'] !== undefined) {
      throw new UsageError(`-f applies to 'appsets apply' and 'appsets preview' only`);
    }
    if (sub !== 'refresh' && values['hard'] !== undefined) {
      throw new UsageError(`--hard applies to 'appsets refresh' only`);
    }
    if (sub !== 'refresh' && sub !== 'confirm-expansion' && values['reason'] !== undefined) {
      throw new UsageError(`--reason applies to 'appsets refresh' and 'appsets confirm-expansion' only`);
    }
    if (sub !== 'confirm-expansion' && values['inputs-hash'] !== undefined) {
      throw new UsageError(`--inputs-hash applies to 'appsets confirm-expansion' only`);
    }
    switch (sub) {
      case 'list': {
        expectPositionals(rest, [], 'flotilla appsets [list]');
        const appSets = await client.appSets();
        printResult(appSets, output, (wide) => appSetTable(appSets, wide));
        return 0;
      }
      case 'get': {
        const appSet = await client.appSet(expectName(rest, 'flotilla appsets get NAME'));
        printResult(appSet, output, () => appSetFields(appSet));
        return 0;
      }
      case 'apply': {
        expectPositionals(rest, [], 'flotilla appsets apply -f FILE');
        const file = stringValue(values['file']);
        if (!file) throw new UsageError('apply needs -f FILE (a YAML or JSON ApplicationSet)');
        const timeoutSeconds = parseTimeout(stringValue(values['timeout']));
        const doc = readOneDocument(file);
        const applied = await client.applyAppSet(doc);
        const appSet =
          values['wait'] === true
            ? await waitForExpansion(client, applied.appSet.name, timeoutSeconds, output)
            : applied.appSet;
        const result = { result: applied.created ? 'created' : 'updated', appSet };
        printResult(result, output, () =>
          [
            `ApplicationSet ${appSet.name} ${result.result}; status ${appSet.status}` +
              (appSet.status === 'Pending' ? '' : `, ${appSet.targetCount} targets`),
            ...errorLines(appSet),
          ].join('\n'),
        );
        return values['wait'] === true && appSet.status !== 'Ready' ? 1 : 0;
      }
      case 'refresh': {
        const name = expectName(rest, 'flotilla appsets refresh NAME [--hard]');
        const reason = stringValue(values['reason']);
        const asked = await client.request<{ hard: boolean; repositories: { url: string }[] }>(
          'POST',
          `/api/v1/appsets/${encodeURIComponent(name)}/refresh`,
          {
            hard: values['hard'] === true,
            ...(reason !== undefined && { reason }),
          },
        );
        printResult(asked, output, () =>
          [
            `ApplicationSet ${name}: evaluation queued.`,
            ...asked.repositories.map((r) => `Fetch queued: ${r.url}`),
          ].join('\n'),
        );
        return 0;
      }
      case 'delete': {
        const name = expectName(rest, 'flotilla appsets delete NAME');
        await client.deleteAppSet(name);
        printResult({ deleted: name }, output, () => `ApplicationSet ${name} deleted; its targets go.`);
        return 0;
      }
      case 'preview': {
        const file = stringValue(values['file']);
        let preview: ExpansionPreviewView;
        if (file !== undefined) {
          expectPositionals(rest, [], 'flotilla appsets preview -f FILE');
          const doc = readOneDocument(file);
          preview = expansionPreviewViewSchema.parse(
            await client.request('POST', '/api/v1/appsets/preview', doc),
          );
        } else {
          const name = expectName(rest, 'flotilla appsets preview NAME | -f FILE');
          preview = expansionPreviewViewSchema.parse(
            await client.request('GET', `/api/v1/appsets/${encodeURIComponent(name)}/preview`),
          );
        }
        printResult(preview, output, () => previewText(preview));
        return 0;
      }
      case 'confirm-expansion': {
        const usage = 'flotilla appsets confirm-expansion NAME --inputs-hash HASH --reason TEXT';
        const name = expectName(rest, usage);
        const inputsHash = stringValue(values['inputs-hash']);
        const reason = stringValue(values['reason']);
        const outcome = expansionOutcomeViewSchema.parse(
          await client.request('POST', `/api/v1/appsets/${encodeURIComponent(name)}/confirm-expansion`, {
            ...(inputsHash !== undefined && { inputsHash }),
            ...(reason !== undefined && { reason }),
          }),
        );
        printResult(
          outcome,
          output,
          () =>
            `ApplicationSet ${name}: ${outcome.status}; ${outcome.created} created, ${outcome.updated} updated, ${outcome.deleted} deleted.` +
            (outcome.error ? `\nerror: ${outcome.error.code}: ${outcome.error.message}` : ''),
        );
        return outcome.status === 'Ready' ? 0 : 1;
      }
      default:
        throw new UsageError(
          `unknown sub-command '${sub}'; expected list, get, apply, delete, refresh, preview or confirm-expansion`,
        );
    }
  });
}

function parseTimeout(raw: string | undefined): number {
  if (raw === undefined) return DEFAULT_WAIT_SECONDS;
  const seconds = Number(raw);
  if (!Number.isFinite(seconds) || seconds <= 0) {
    throw new UsageError(`--timeout must be a positive number of seconds, not '${raw}'`);
  }
  return seconds;
}

/** Polls until the expansion the apply queued has run (status leaves Pending) or the time is up. */
async function waitForExpansion(
  client: HubClient,
  name: string,
  timeoutSeconds: number,
  output: string,
): Promise<AppSetView> {
  const deadline = Date.now() + timeoutSeconds * 1000;
  const progress = startProgress(`waiting for the hub to expand ApplicationSet ${name}`, output);
  for (;;) {
    const appSet = await client.appSet(name);
    if (appSet.status !== 'Pending' || Date.now() >= deadline) {
      const ended = appSet.status === 'Pending' ? 'still Pending: --timeout reached' : appSet.status;
      progress.done(`ApplicationSet ${name}: ${ended}`, appSet.status === 'Ready');
      return appSet;
    }
    await sleep(250);
  }
}

function previewText(p: ExpansionPreviewView): string {
  const names = (list: string[]) => (list.length > 0 ? list.join(', ') : '-');
  const guard = p.guard.wouldHold
    ? `would hold it: ${p.guard.deletePercent}% of the targets go, more than ${p.guard.limit}% (confirm with --inputs-hash ${p.inputsHash})`
    : `lets it through (${p.guard.deletePercent}% go, limit ${p.guard.limit}%)`;
  return [
    formatFields([
      ['Inputs hash', p.inputsHash],
      ['Create', names(p.create)],
      ['Update', names(p.update)],
      ['Move', names(p.move)],
      ['Delete', names(p.delete)],
      ['Deletion guard', guard],
    ]),
    '',
    formatTable(
      ['TARGET', 'CLUSTER', 'NAMESPACE', 'REVISION'],
      p.targets.map((t) => [t.name, t.cluster, t.namespace, shortSha(t.desiredRevision)]),
    ),
  ].join('\n');
}

/** The contract leaves `error` open (the hub stores it as JSON); it holds an ApiError when set. */
function expansionError(appSet: AppSetView): ApiError | null {
  const parsed = apiErrorSchema.safeParse(appSet.error);
  return parsed.success ? parsed.data : null;
}

function errorLines(appSet: AppSetView): string[] {
  const e = expansionError(appSet);
  if (!e) return [];
  return [`error: ${e.code}: ${e.message}${e.path ? ` (at ${e.path})` : ''}`];
}

/** `api`, or `git fleet/web.yaml@0123456` for one a fleet repository manages. */
function managedBy(a: AppSetView): string {
  const { managedBy: by, file, commit } = a.source;
  if (!file && !commit) return by;
  return `${by} ${file ?? '?'}${commit ? `@${shortSha(commit)}` : ''}`;
}

const APPSET_COLUMNS: Column<AppSetView>[] = [
  { header: 'NAME', cell: (a) => a.name },
  { header: 'PROJECT', cell: (a) => a.project, wide: true },
  { header: 'API VERSION', cell: (a) => a.apiVersion, wide: true },
  { header: 'STATUS', cell: (a) => a.status },
  { header: 'TARGETS', cell: (a) => String(a.targetCount) },
  { header: 'EXPANDED', cell: (a) => age(a.lastExpandedAt) },
  { header: 'UPDATED', cell: (a) => age(a.updatedAt), wide: true },
  { header: 'MANAGED BY', cell: managedBy, wide: true },
  { header: 'REPOSITORIES', cell: (a) => (a.repoUrls.length ? a.repoUrls.join(',') : '-') },
  { header: 'ERROR', cell: (a) => errorCell(expansionError(a)) },
];

export function appSetTable(appSets: AppSetView[], wide = false): string {
  return columnsTable(APPSET_COLUMNS, appSets, wide);
}

function errorCell(e: ApiError | null): string {
  return e ? `${e.code}: ${e.message.replace(/\s*\n\s*/g, ' ')}` : '';
}

function appSetFields(a: AppSetView): string {
  const fields: [string, string][] = [
    ['Name', a.name],
    ['API version', a.apiVersion],
    ['Status', a.status],
    ['Targets', String(a.targetCount)],
    ['Repositories', a.repoUrls.length ? a.repoUrls.join(', ') : '-'],
    ['Last expanded', a.lastExpandedAt ? `${a.lastExpandedAt} (${age(a.lastExpandedAt)} ago)` : 'never'],
    ['Created', a.createdAt],
    ['Updated', a.updatedAt],
  ];
  const error = expansionError(a);
  if (error) {
    fields.push(['Error', `${error.code}: ${error.message}`]);
    if (error.path) fields.push(['Error path', error.path]);
  }
  return formatFields(fields);
}
