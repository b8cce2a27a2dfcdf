import { readFileSync } from 'node:fs';
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
import {
  age,
  columnsTable,
  describeHubCommand,
  expectPositionals,
  formatFields,
  formatTable,
  printResult,
  runHubCommand,
  shortSha,
  stringValue,
  type Column,
  type HubCommandSpec,
} from './hub-command.js';

const SPEC: HubCommandSpec = {
  name: 'repositories',
  subcommands: ['list', 'verification', 'verify', 'verification-history'],
  listings: ['', 'list'],
  usage: [
    'usage: flotilla repositories [list]',
    '       flotilla repositories verification URL',
    '       flotilla repositories verify URL --mode none|head|strict [--allowed-signers FILE] [--gpg-keys FILE]',
    '       flotilla repositories verification-history URL',
    '',
    'Git repositories the hub mirrors. `verify` (admins) sets which commits must be signed before a',
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
    if (sub !== 'verify' && Object.keys(SPEC.options).some((o) => values[o] !== undefined))
      throw new UsageError("--mode, --allowed-signers and --gpg-keys apply to 'repositories verify' only");
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
          allowedSigners: readKeys(stringValue(values['allowed-signers']), '--allowed-signers'),
          gpgKeys: readKeys(stringValue(values['gpg-keys']), '--gpg-keys'),
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
        throw new UsageError(
          `unknown sub-command '${sub}'; expected list, verification, verify or verification-history`,
        );
    }
  });
}

function readKeys(file: string | undefined, flag: string): string {
  if (file === undefined) return '';
  try {
    return readFileSync(file, 'utf8');
  } catch (e) {
    throw new UsageError(`${flag}: cannot read ${file}: ${(e as Error).message}`);
  }
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
