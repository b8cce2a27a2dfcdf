import { type CommandDescription } from '../command.js';
import {
  CHART_VERIFY_MODES,
  chartRepositoryCredentialsViewSchema,
  chartRepositoryVerificationChangeSchema,
  chartRepositoryVerificationViewSchema,
  type ChartRepositoryCredentialsView,
  type ChartRepositoryVerificationChange,
  type ChartRepositoryVerificationView,
} from '@flotilla/contract';
import { z } from 'zod';
import { UsageError } from '../offline/offline-command.js';
import {
  age,
  columnsTable,
  expectPositionals,
  firstLineOfStdin,
  formatFields,
  formatTable,
  printResult,
  describeHubCommand,
  runHubCommand,
  stringValue,
  type Column,
  type HubCommandArgs,
  type HubCommandSpec,
} from './hub-command.js';
import { readKeyFile } from './key-file.js';

const SPEC: HubCommandSpec = {
  name: 'chart-repositories',
  subcommands: ['list', 'add', 'remove', 'verification', 'verify', 'verification-history'],
  listings: ['', 'list'],
  usage: [
    'usage: flotilla chart-repositories [list]',
    '       flotilla chart-repositories add URL --username USER --password-stdin',
    '       flotilla chart-repositories remove URL',
    '       flotilla chart-repositories verification [URL]',
    '       flotilla chart-repositories verify URL --mode none|when-present|required [--gpg-keys FILE]',
    '       flotilla chart-repositories verification-history URL',
    '',
    'Credentials for charts from Helm repositories (https://…) and OCI registries (oci://host/path),',
    'admins only. They apply to every chart under URL (the longest match wins). The hub seals the',
    'password at rest and never shows it; it is read from the first line of standard input.',
    '`list -o wide` adds the id and when the credentials were first stored.',
    '`verify` (admins) sets whether the charts of URL must carry a Helm provenance file (.prov) signed',
    'by a key of the ASCII-armored keyring FILE: when-present checks a chart that has one, required',
    'refuses a chart without one. `verification` shows the setting (without URL: every one);',
    '`verification-history` every version. docs/verified-sources.md, Helm provenance.',
  ].join('\n'),
  options: {
    username: { type: 'string' },
    'password-stdin': { type: 'boolean' },
    mode: { type: 'string' },
    'gpg-keys': { type: 'string' },
  },
};

export const describe: CommandDescription = describeHubCommand(SPEC);

const listSchema = z.array(chartRepositoryCredentialsViewSchema);

export function run(argv: string[]): Promise<number> {
  return runHubCommand(argv, SPEC, async ({ values, positionals, output, client }) => {
    const [sub = 'list', ...rest] = positionals;
    if (sub !== 'add' && (values['username'] !== undefined || values['password-stdin'] !== undefined)) {
      throw new UsageError(`--username and --password-stdin apply to 'chart-repositories add' only`);
    }
    if (sub !== 'verify' && (values['mode'] !== undefined || values['gpg-keys'] !== undefined))
      throw new UsageError(`--mode and --gpg-keys apply to 'chart-repositories verify' only`);
    if (sub === 'verification' || sub === 'verify' || sub === 'verification-history')
      return verification(sub, rest, { values, output, client });
    switch (sub) {
      case 'list': {
        expectPositionals(rest, [], 'flotilla chart-repositories [list]');
        const list = listSchema.parse(await client.request('GET', '/api/v1/chart-repositories'));
        printResult(list, output, (wide) => chartRepositoryTable(list, wide));
        return 0;
      }
      case 'add': {
        const url = expectUrl(rest, 'flotilla chart-repositories add URL --username USER --password-stdin');
        const username = stringValue(values['username']);
        if (!username) throw new UsageError('--username is required');
        if (values['password-stdin'] !== true) {
          throw new UsageError(
            '--password-stdin is required: the password is read from standard input, never a flag',
          );
        }
        const password = await firstLineOfStdin();
        if (!password) throw new UsageError('--password-stdin: standard input held no password');
        const saved = chartRepositoryCredentialsViewSchema.parse(
          await client.request('PUT', '/api/v1/chart-repositories', { url, username, password }),
        );
        printResult(
          saved,
          output,
          () => `Credentials for ${saved.url} (user ${saved.username}) stored, sealed.`,
        );
        return 0;
      }
      case 'remove': {
        const url = expectUrl(rest, 'flotilla chart-repositories remove URL').replace(/\/+$/, '');
        const list = listSchema.parse(await client.request('GET', '/api/v1/chart-repositories'));
        const found = list.find((c) => c.url === url);
        if (!found) throw new UsageError(`no credentials are stored for ${url}`);
        await client.request('DELETE', `/api/v1/chart-repositories/${encodeURIComponent(found.id)}`);
        printResult({ removed: found.url }, output, () => `Credentials for ${found.url} removed.`);
        return 0;
      }
      default:
        throw new UsageError(`unknown sub-command '${sub}'; expected ${SPEC.subcommands?.join(', ')}`);
    }
  });
}

const CHART_REPOSITORY_COLUMNS: Column<ChartRepositoryCredentialsView>[] = [
  { header: 'ID', cell: (c) => c.id, wide: true },
  { header: 'URL', cell: (c) => c.url },
  { header: 'USERNAME', cell: (c) => c.username },
  { header: 'CREATED', cell: (c) => c.createdAt, wide: true },
  { header: 'UPDATED', cell: (c) => age(c.updatedAt) },
];

export function chartRepositoryTable(list: ChartRepositoryCredentialsView[], wide = false): string {
  return columnsTable(CHART_REPOSITORY_COLUMNS, list, wide);
}

function expectUrl(positionals: string[], usage: string): string {
  const [url] = expectPositionals(positionals, ['URL'], usage);
  if (url === undefined || url === '') throw new UsageError(`missing URL; usage: ${usage}`);
  return url;
}

/** `verification [URL]`, `verify URL --mode M [--gpg-keys FILE]`, `verification-history URL`. */
async function verification(
  sub: 'verification' | 'verify' | 'verification-history',
  rest: string[],
  { values, output, client }: Pick<HubCommandArgs, 'values' | 'output' | 'client'>,
): Promise<number> {
  const path = '/api/v1/chart-repositories/verification';
  if (sub === 'verification') {
    if (rest.length > 1)
      throw new UsageError(
        `unexpected argument '${rest[1]}'; usage: flotilla chart-repositories verification [URL]`,
      );
    const [url] = rest;
    const query = url ? `?url=${encodeURIComponent(url)}` : '';
    const list = z
      .array(chartRepositoryVerificationViewSchema)
      .parse(await client.request('GET', `${path}${query}`));
    printResult(url ? list[0] : list, output, () =>
      url && list[0] ? verificationFields(list[0]) : verificationTable(list),
    );
    return 0;
  }
  if (sub === 'verification-history') {
    const url = expectUrl(rest, 'flotilla chart-repositories verification-history URL');
    const history = z
      .array(chartRepositoryVerificationChangeSchema)
      .parse(await client.request('GET', `${path}/history?url=${encodeURIComponent(url)}`));
    printResult(history, output, () => historyTable(history));
    return 0;
  }
  const url = expectUrl(rest, 'flotilla chart-repositories verify URL --mode MODE [--gpg-keys FILE]');
  const verify = stringValue(values['mode']);
  if (!verify || !(CHART_VERIFY_MODES as readonly string[]).includes(verify))
    throw new UsageError(`--mode must be ${CHART_VERIFY_MODES.join(', ')}`);
  const gpgKeys = readKeyFile(stringValue(values['gpg-keys']), '--gpg-keys');
  const view = chartRepositoryVerificationViewSchema.parse(
    await client.request('PUT', path, { url, verify, gpgKeys }),
  );
  printResult(
    view,
    output,
    () => `${view.url}: provenance ${view.verify}, ${view.fingerprints.length} allowed key(s).`,
  );
  return 0;
}

function verificationFields(view: ChartRepositoryVerificationView): string {
  return formatFields([
    ['repository', view.url],
    ['verify', view.verify],
    ['allowed keys', view.fingerprints.join(', ') || '-'],
    ['set by', view.setBy ?? '-'],
    ['set', age(view.setAt)],
  ]);
}

function verificationTable(list: ChartRepositoryVerificationView[]): string {
  return formatTable(
    ['URL', 'VERIFY', 'ALLOWED KEYS', 'SET BY'],
    list.map((v) => [v.url, v.verify, v.fingerprints.join(', ') || '-', v.setBy ?? '-']),
  );
}

function historyTable(history: ChartRepositoryVerificationChange[]): string {
  return formatTable(
    ['SET', 'BY', 'VERIFY', 'ALLOWED KEYS'],
    history.map((h) => [h.setAt ?? '-', h.setBy ?? '-', h.verify, h.fingerprints.join(', ') || '-']),
  );
}
