import {
  repositoryVerificationChangeSchema,
  repositoryVerificationViewSchema,
  VERIFICATION_MODES,
  type RepositoryVerificationChange,
  type RepositoryVerificationView,
} from '@flotilla/contract';
import { z } from 'zod';
import { type CommandDescription } from '../command.js';
import { UsageError } from '../offline/offline-command.js';
import { readKeyFile } from './key-file.js';
import {
  age,
  columnsTable,
  describeHubCommand,
  expectPositionals,
  formatFields,
  firstLineOfStdin,
  formatTable,
  printResult,
  runHubCommand,
  shortSha,
  stringValue,
  type Column,
  type HubArgValue,
  type HubCommandSpec,
} from './hub-command.js';

const CREDENTIALS_USAGE = '--username USER --password-stdin | --ssh-key FILE';
const VERIFY_OPTIONS = ['mode', 'allowed-signers', 'gpg-keys'];
const CREDENTIAL_OPTIONS = ['username', 'password-stdin', 'ssh-key'];

const SPEC: HubCommandSpec = {
  name: 'repositories',
  subcommands: [
    'list',
    'get',
    'add',
    'refresh',
    'credentials',
    'remove-credentials',
    'verification',
    'verify',
    'verification-history',
  ],
  listings: ['', 'list'],
  usage: [
    'usage: flotilla repositories [list]',
    '       flotilla repositories get URL',
    `       flotilla repositories add URL [${CREDENTIALS_USAGE}]`,
    '       flotilla repositories refresh URL',
    `       flotilla repositories credentials URL ${CREDENTIALS_USAGE}`,
    '       flotilla repositories remove-credentials URL',
    '       flotilla repositories verification URL',
    '       flotilla repositories verify URL --mode none|head|strict [--allowed-signers FILE] [--gpg-keys FILE]',
    '       flotilla repositories verification-history URL',
    '',
    'Git repositories the hub mirrors. `add` (admins) registers one, with credentials or without;',
    '`credentials` stores or replaces them (then fetches again) and `remove-credentials` drops them:',
    'an HTTPS token (user, and the token on the first line of standard input) or an SSH private key',
    'file. The hub seals them at rest and never shows them. `refresh` fetches now.',
    '`verify` (admins) sets which commits must be signed before a',
    'revision is released — head: the commit to deploy; strict: every commit since the last verified',
    "one — and the keys allowed to sign: FILE in git's allowed-signers format (SSH keys) and/or an",
    'armored GPG keyring. Both lists are replaced whole; the previous version is kept (history).',
    'docs/verified-sources.md. `list -o wide` adds the whole commit, the last fetch attempt, the kind of',
    'credentials (never the secret) and the last fetch error.',
  ].join('\n'),
  options: {
    mode: { type: 'string' },
    'allowed-signers': { type: 'string' },
    'gpg-keys': { type: 'string' },
    username: { type: 'string' },
    'password-stdin': { type: 'boolean' },
    'ssh-key': { type: 'string' },
  },
  apiFields: {
    mode: 'mode',
    allowedSigners: 'allowed-signers',
    gpgKeys: 'gpg-keys',
    'credentials.username': 'username',
    'credentials.token': 'password-stdin',
    'credentials.privateKey': 'ssh-key',
    username: 'username',
    token: 'password-stdin',
    privateKey: 'ssh-key',
  },
};

export const describe: CommandDescription = describeHubCommand(SPEC);

const repositorySchema = z.object({
  id: z.string(),
  url: z.string(),
  status: z.string(),
  lastFetchedCommit: z.string().nullable(),
  lastFetchedAt: z.string().nullable(),
  verificationMode: z.string(),
  // Shown by -o wide; optional, so that an older hub's answer still reads.
  lastAttemptAt: z.string().nullable().optional(),
  error: z.string().nullable().optional(),
  credentials: z.object({ type: z.string(), username: z.string().nullable() }).nullable().optional(),
});

export function run(argv: string[]): Promise<number> {
  return runHubCommand(argv, SPEC, async ({ values, positionals, output, client }) => {
    const [sub = 'list', ...rest] = positionals;
    if (sub !== 'verify' && VERIFY_OPTIONS.some((o) => values[o] !== undefined))
      throw new UsageError("--mode, --allowed-signers and --gpg-keys apply to 'repositories verify' only");
    if (sub !== 'add' && sub !== 'credentials' && CREDENTIAL_OPTIONS.some((o) => values[o] !== undefined))
      throw new UsageError(
        "--username, --password-stdin and --ssh-key apply to 'repositories add' and 'repositories credentials' only",
      );
    const list = async () =>
      z.array(repositorySchema).parse(await client.request('GET', '/api/v1/repositories'));
    const idOf = async (usage: string) => {
      const [url] = expectPositionals(rest, ['URL'], usage);
      const found = (await list()).find((r) => r.url === url);
      if (!found) throw new UsageError(`the hub has no repository ${url}; see 'flotilla repositories'`);
      return found.id;
    };
    switch (sub) {
      case 'list': {
        expectPositionals(rest, [], 'flotilla repositories [list]');
        const repos = await list();
        printResult(repos, output, (wide) => repositoriesTable(repos, wide));
        return 0;
      }
      case 'get': {
        const id = await idOf('flotilla repositories get URL');
        const repo = repositorySchema.parse(await client.request('GET', `/api/v1/repositories/${id}`));
        printResult(repo, output, () => repositoryFields(repo));
        return 0;
      }
      case 'add': {
        const [url = ''] = expectPositionals(
          rest,
          ['URL'],
          `flotilla repositories add URL [${CREDENTIALS_USAGE}]`,
        );
        const given = CREDENTIAL_OPTIONS.some((o) => values[o] !== undefined);
        const credentials = given ? await credentialsOf(values) : undefined;
        const repo = repositorySchema.parse(
          await client.request('POST', '/api/v1/repositories', { url, ...(credentials && { credentials }) }),
        );
        printResult(
          repo,
          output,
          () => `Repository ${repo.url} registered (${repo.status}).\n${repositoryFields(repo)}`,
        );
        return 0;
      }
      case 'refresh': {
        const id = await idOf('flotilla repositories refresh URL');
        const queued = await client.request<unknown>('POST', `/api/v1/repositories/${id}/refresh`);
        printResult(queued, output, () => `Fetch of ${rest[0] ?? ''} queued.`);
        return 0;
      }
      case 'credentials': {
        const id = await idOf(`flotilla repositories credentials URL ${CREDENTIALS_USAGE}`);
        const credentials = await credentialsOf(values);
        const repo = repositorySchema.parse(
          await client.request('PUT', `/api/v1/repositories/${id}/credentials`, credentials),
        );
        printResult(repo, output, () => `Credentials of ${repo.url} stored, sealed; fetching again.`);
        return 0;
      }
      case 'remove-credentials': {
        const id = await idOf('flotilla repositories remove-credentials URL');
        const repo = repositorySchema.parse(
          await client.request('DELETE', `/api/v1/repositories/${id}/credentials`),
        );
        printResult(repo, output, () => `Credentials of ${repo.url} removed.`);
        return 0;
      }
      case 'verification': {
        const id = await idOf('flotilla repositories verification URL');
        const view = repositoryVerificationViewSchema.parse(
          await client.request('GET', `/api/v1/repositories/${id}/verification`),
        );
        printResult(view, output, () => verificationFields(view));
        return 0;
      }
      case 'verify': {
        const mode = stringValue(values['mode']);
        if (!mode || !(VERIFICATION_MODES as readonly string[]).includes(mode))
          throw new UsageError(`--mode must be ${VERIFICATION_MODES.join(', ')}`);
        const id = await idOf(
          'flotilla repositories verify URL --mode MODE [--allowed-signers FILE] [--gpg-keys FILE]',
        );
        const body = {
          mode,
          allowedSigners: readKeyFile(stringValue(values['allowed-signers']), '--allowed-signers'),
          gpgKeys: readKeyFile(stringValue(values['gpg-keys']), '--gpg-keys'),
        };
        const view = repositoryVerificationViewSchema.parse(
          await client.request('PUT', `/api/v1/repositories/${id}/verification`, body),
        );
        printResult(
          view,
          output,
          () => `${view.repository}: verification ${view.mode}, ${view.fingerprints.length} allowed key(s).`,
        );
        return 0;
      }
      case 'verification-history': {
        const id = await idOf('flotilla repositories verification-history URL');
        const history = z
          .array(repositoryVerificationChangeSchema)
          .parse(await client.request('GET', `/api/v1/repositories/${id}/verification/history`));
        printResult(history, output, () => historyTable(history));
        return 0;
      }
      default:
        throw new UsageError(`unknown sub-command '${sub}'; expected ${SPEC.subcommands?.join(', ')}`);
    }
  });
}

/**
 * What `--username USER --password-stdin` or `--ssh-key FILE` give, as the hub takes it. A secret
 * never comes as a flag's value: it would stay in the shell's history and the process list.
 */
async function credentialsOf(values: Record<string, HubArgValue>): Promise<Record<string, string>> {
  const sshKey = stringValue(values['ssh-key']);
  const username = stringValue(values['username']);
  if (sshKey !== undefined) {
    if (username !== undefined || values['password-stdin'] !== undefined)
      throw new UsageError(`give an HTTPS token or an SSH key, not both: ${CREDENTIALS_USAGE}`);
    return { type: 'ssh-key', privateKey: readKeyFile(sshKey, '--ssh-key') };
  }
  if (!username) throw new UsageError(`--username is required with a token: ${CREDENTIALS_USAGE}`);
  if (values['password-stdin'] !== true)
    throw new UsageError('--password-stdin is required: the token is read from standard input, never a flag');
  const token = await firstLineOfStdin();
  if (!token) throw new UsageError('--password-stdin: standard input held no token');
  return { type: 'https-token', username, token };
}

function repositoryFields(r: Repository): string {
  return formatFields([
    ['URL', r.url],
    ['Status', r.status],
    ['Head', r.lastFetchedCommit ?? '-'],
    ['Fetched', r.lastFetchedAt ?? 'never'],
    [
      'Credentials',
      r.credentials
        ? `${r.credentials.type}${r.credentials.username ? ` (user ${r.credentials.username})` : ''}`
        : 'none',
    ],
    ['Verification', r.verificationMode],
    ...(r.error ? ([['Error', r.error]] as [string, string][]) : []),
  ]);
}

type Repository = z.infer<typeof repositorySchema>;

const REPOSITORY_COLUMNS: Column<Repository>[] = [
  { header: 'URL', cell: (r) => r.url },
  { header: 'STATUS', cell: (r) => r.status },
  {
    header: 'HEAD',
    cell: (r, wide) => (wide ? (r.lastFetchedCommit ?? '-') : shortSha(r.lastFetchedCommit)),
  },
  { header: 'FETCHED', cell: (r) => age(r.lastFetchedAt) },
  { header: 'LAST ATTEMPT', cell: (r) => age(r.lastAttemptAt), wide: true },
  {
    header: 'CREDENTIALS',
    cell: (r) =>
      r.credentials
        ? `${r.credentials.type}${r.credentials.username ? ` ${r.credentials.username}` : ''}`
        : '-',
    wide: true,
  },
  { header: 'VERIFICATION', cell: (r) => r.verificationMode },
  { header: 'ERROR', cell: (r) => (r.error ?? '-').replace(/\s*\n\s*/g, ' '), wide: true },
];

export function repositoriesTable(repos: Repository[], wide = false): string {
  return columnsTable(REPOSITORY_COLUMNS, repos, wide);
}

function verificationFields(view: RepositoryVerificationView): string {
  return formatFields([
    ['repository', view.repository],
    ['mode', view.mode],
    ['allowed keys', view.fingerprints.join(', ') || '-'],
    ['managed by', view.managedBy === 'git' ? 'git (a fleet repository SourceVerification)' : 'the API'],
    ['set by', view.setBy ?? '-'],
    ['set', age(view.setAt)],
  ]);
}

function historyTable(history: RepositoryVerificationChange[]): string {
  return formatTable(
    ['SET', 'BY', 'MODE', 'ALLOWED KEYS'],
    history.map((h) => [h.setAt ?? '-', h.setBy ?? '-', h.mode, h.fingerprints.join(', ') || '-']),
  );
}
