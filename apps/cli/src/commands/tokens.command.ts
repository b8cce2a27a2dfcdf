import { type CommandDescription } from '../command.js';
import {
  apiTokenViewSchema,
  createdApiTokenSchema,
  peopleRoleSchema,
  type ApiTokenView,
  type CreatedApiToken,
} from '@flotilla/contract';
import { z } from 'zod';
import { UsageError } from '../offline/offline-command.js';
import {
  age,
  columnsTable,
  expectName,
  expectPositionals,
  printResult,
  describeHubCommand,
  runHubCommand,
  stringValue,
  type Column,
  type HubCommandSpec,
} from './hub-command.js';

const SPEC: HubCommandSpec = {
  name: 'tokens',
  subcommands: ['list', 'create', 'revoke'],
  listings: ['', 'list'],
  usage: [
    'usage: flotilla tokens [list]',
    '       flotilla tokens create NAME --role viewer|operator|admin [--expires-in-days N]',
    '       flotilla tokens revoke NAME',
    '',
    "People's API tokens (admins only). `create` prints the token once: the hub keeps only its hash.",
    'viewer reads; operator also syncs, pins, opens break-glass and drives rollouts; admin does',
    'everything, including clusters, repositories and tokens. `revoke` refuses the token at once.',
    '`list -o wide` adds when each token was created and revoked.',
  ].join('\n'),
  options: {
    role: { type: 'string' },
    'expires-in-days': { type: 'string' },
  },
  apiFields: { role: 'role', expiresInDays: 'expires-in-days' },
};

export const describe: CommandDescription = describeHubCommand(SPEC);

export function run(argv: string[]): Promise<number> {
  return runHubCommand(argv, SPEC, async ({ values, positionals, output, client }) => {
    const [sub = 'list', ...rest] = positionals;
    if (sub !== 'create' && (values['role'] !== undefined || values['expires-in-days'] !== undefined)) {
      throw new UsageError(`--role and --expires-in-days apply to 'tokens create' only`);
    }
    switch (sub) {
      case 'list': {
        expectPositionals(rest, [], 'flotilla tokens [list]');
        const tokens = z.array(apiTokenViewSchema).parse(await client.request('GET', '/api/v1/tokens'));
        printResult(tokens, output, (wide) => tokenTable(tokens, wide));
        return 0;
      }
      case 'create': {
        const name = expectName(rest, 'flotilla tokens create NAME --role ROLE');
        const role = peopleRoleSchema.safeParse(stringValue(values['role']));
        if (!role.success) throw new UsageError('--role must be viewer, operator or admin');
        const days = stringValue(values['expires-in-days']);
        if (days !== undefined && !/^[1-9]\d*$/.test(days)) {
          throw new UsageError(`--expires-in-days must be a whole number of days, not '${days}'`);
        }
        const created = createdApiTokenSchema.parse(
          await client.request('POST', '/api/v1/tokens', {
            name,
            role: role.data,
            ...(days !== undefined && { expiresInDays: Number(days) }),
          }),
        );
        printResult(created, output, () => createdText(created));
        return 0;
      }
      case 'revoke': {
        const name = expectName(rest, 'flotilla tokens revoke NAME');
        const token = apiTokenViewSchema.parse(
          await client.request('DELETE', `/api/v1/tokens/${encodeURIComponent(name)}`),
        );
        printResult(token, output, () => `Revoked API token ${token.name}; the hub refuses it from now on.`);
        return 0;
      }
      default:
        throw new UsageError(`unknown sub-command '${sub}'; expected list, create or revoke`);
    }
  });
}

function tokenState(t: ApiTokenView): string {
  if (t.revokedAt) return 'revoked';
  return t.expiresAt && Date.parse(t.expiresAt) <= Date.now() ? 'expired' : 'active';
}

const TOKEN_COLUMNS: Column<ApiTokenView>[] = [
  { header: 'NAME', cell: (t) => t.name },
  { header: 'ROLE', cell: (t) => t.role },
  { header: 'STATE', cell: tokenState },
  { header: 'EXPIRES', cell: (t) => t.expiresAt ?? 'never' },
  { header: 'LAST USED', cell: (t) => (t.lastUsedAt ? `${age(t.lastUsedAt)} ago` : 'never') },
  { header: 'CREATED', cell: (t) => t.createdAt, wide: true },
  { header: 'REVOKED', cell: (t) => t.revokedAt ?? '-', wide: true },
  { header: 'CREATED BY', cell: (t) => t.createdBy },
];

export function tokenTable(tokens: ApiTokenView[], wide = false): string {
  return columnsTable(TOKEN_COLUMNS, tokens, wide);
}

function createdText(created: CreatedApiToken): string {
  const t = created.token;
  return [
    `Created API token ${t.name} (${t.role}, expires ${t.expiresAt ?? 'never'}).`,
    'Token (shown only now; the hub keeps only its hash):',
    `  ${created.secret}`,
    '',
    `Use it with: FLOTILLA_TOKEN=${created.secret} flotilla ...`,
  ].join('\n');
}
