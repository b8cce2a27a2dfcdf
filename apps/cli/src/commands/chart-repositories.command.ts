import { type CommandDescription } from '../command.js';
import {
  chartRepositoryCredentialsViewSchema,
  type ChartRepositoryCredentialsView,
} from '@flotilla/contract';
import { z } from 'zod';
import { UsageError } from '../offline/offline-command.js';
import {
  age,
  columnsTable,
  expectPositionals,
  firstLineOfStdin,
  printResult,
  describeHubCommand,
  runHubCommand,
  stringValue,
  type Column,
  type HubCommandSpec,
} from './hub-command.js';

const SPEC: HubCommandSpec = {
  name: 'chart-repositories',
  subcommands: ['list', 'add', 'remove'],
  listings: ['', 'list'],
  usage: [
    'usage: flotilla chart-repositories [list]',
    '       flotilla chart-repositories add URL --username USER --password-stdin',
    '       flotilla chart-repositories remove URL',
    '',
    'Credentials for charts from Helm repositories (https://…) and OCI registries (oci://host/path),',
    'admins only. They apply to every chart under URL (the longest match wins). The hub seals the',
    'password at rest and never shows it; it is read from the first line of standard input.',
    '`list -o wide` adds the id and when the credentials were first stored.',
  ].join('\n'),
  options: {
    username: { type: 'string' },
    'password-stdin': { type: 'boolean' },
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
        throw new UsageError(`unknown sub-command '${sub}'; expected list, add or remove`);
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
