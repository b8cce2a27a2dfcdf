import { GIT_HOST_KINDS, type AuditActor, type GitHostKind, type WriteAccessView } from '@flotilla/contract';
import { Inject, Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import { z } from 'zod';
import { HUB_CONFIG, type HubConfig } from '../../config/hub-config.js';
import { Database } from '../../db/database.js';
import { HubError } from '../../common/hub-error.js';
import { AuditLog } from '../../audit/audit.service.js';
import { CredentialCipher, CredentialCipherError } from '../git/credential-cipher.js';
import type { GitAuth } from '../git/git-credentials.js';
import type { Repository } from '../../generated/prisma/client.js';
import { repositoryCredentialsSchema } from './repositories.service.js';
import { repositoryPathOf } from './repository-url.js';

/** Where each host's API lives unless the request names another (self-hosted; Gitea always). */
const DEFAULT_API_URLS: Partial<Record<GitHostKind, string>> = {
  github: 'https://api.github.com',
  gitlab: 'https://gitlab.com/api/v4',
};

export const writeAccessSchema = z
  .object({
    /** What pushes the revert branch: a token (HTTPS) or a deploy key with write access (SSH). */
    credentials: repositoryCredentialsSchema,
    host: z
      .object({
        kind: z.enum(GIT_HOST_KINDS),
        apiUrl: z.url({ protocol: /^https?$/ }).optional(),
        /** `owner/name` (GitLab: the project's full path); unset = taken from the repository URL. */
        repository: z
          .string()
          .regex(/^[\w.-]+(\/[\w.-]+)+$/, 'expected owner/name')
          .optional(),
        /** The API token that opens pull requests; required with a deploy key (it cannot call the API). */
        token: z.string().min(1).max(8192).optional(),
      })
      .strict(),
    /** Reverts of targets that follow no branch (a tag, a commit, HEAD) go to this branch; default main. */
    baseBranch: z
      .string()
      .regex(/^(?!-)[\w./-]+$/, 'expected a branch name')
      .optional(),
  })
  .strict();
export type WriteAccessInput = z.output<typeof writeAccessSchema>;

/** What a revert needs of a repository with write access, opened for the length of one revert. */
export interface OpenedWriteAccess {
  push: GitAuth;
  host: { kind: GitHostKind; apiUrl: string; repository: string; token: string };
  baseBranch: string | null;
}

/**
 * Write access to a repository, for rollback by revert: the credential that pushes a branch and the
 * Git host's API that opens the pull request. Sealed with FLOTILLA_SECRETS_KEY like the read
 * credentials (in their own context, so one never opens as the other), never returned by the API.
 */
@Injectable()
export class WriteAccessService implements OnModuleInit {
  private readonly logger = new Logger(WriteAccessService.name);
  private readonly cipher: CredentialCipher;

  constructor(
    private readonly db: Database,
    private readonly audit: AuditLog,
    @Inject(HUB_CONFIG) config: HubConfig,
  ) {
    this.cipher = new CredentialCipher(config.secrets.key, config.secrets.previousKeys);
  }

  /** Key rotation, as for the read credentials: sealed again with the current key. */
  async onModuleInit(): Promise<void> {
    if (!this.cipher.canSeal) return;
    const sealed = await this.db.prisma.repository.findMany({
      where: { writeCredentialCiphertext: { not: null } },
    });
    for (const r of sealed) {
      try {
        const data: Partial<Repository> = {};
        for (const [field, context] of [
          ['writeCredentialCiphertext', writeContext(r.id)],
          ['hostApiTokenCiphertext', apiTokenContext(r.id)],
        ] as const) {
          const value = r[field];
          if (value && this.cipher.isStale(value))
            data[field] = this.cipher.seal(this.cipher.open(value, context), context);
        }
        if (Object.keys(data).length === 0) continue;
        await this.db.prisma.repository.updateMany({
          where: { id: r.id, writeCredentialCiphertext: r.writeCredentialCiphertext },
          data,
        });
      } catch (e) {
        if (!(e instanceof CredentialCipherError)) throw e;
        this.logger.warn(`repository ${r.url}: write access cannot be resealed: ${e.message}`);
      }
    }
  }

  async set(id: string, input: WriteAccessInput, actor: AuditActor): Promise<WriteAccessView> {
    const repo = await this.db.prisma.repository.findUnique({ where: { id } });
    if (!repo) throw HubError.notFound('repository', id);
    if (!this.cipher.canSeal)
      throw new HubError(
        503,
        'secrets-key-missing',
        'FLOTILLA_SECRETS_KEY is not set on the hub: write access cannot be stored',
        'credentials',
      );
    const { credentials, host } = input;
    if (credentials.type === 'ssh-key' && host.token === undefined)
      throw new HubError(
        400,
        'invalid-request',
        'host.token: a deploy key cannot call the host API; give the API token that opens pull requests',
        'host.token',
      );
    const apiUrl = host.apiUrl ?? DEFAULT_API_URLS[host.kind];
    if (apiUrl === undefined)
      throw new HubError(
        400,
        'invalid-request',
        `host.apiUrl: ${host.kind} has no default API URL`,
        'host.apiUrl',
      );
    const hostRepository = host.repository ?? repositoryPathOf(repo.url);
    if (hostRepository === null)
      throw new HubError(
        400,
        'invalid-request',
        `host.repository: the URL ${repo.url} names no owner/name; give the repository on the host`,
        'host.repository',
      );
    const secret = credentials.type === 'https-token' ? credentials.token : credentials.privateKey;
    await this.db.prisma.repository.update({
      where: { id },
      data: {
        writeCredentialType: credentials.type,
        writeCredentialUsername: credentials.type === 'https-token' ? credentials.username : null,
        writeCredentialCiphertext: this.cipher.seal(secret, writeContext(id)),
        hostApiTokenCiphertext:
          host.token === undefined ? null : this.cipher.seal(host.token, apiTokenContext(id)),
        hostKind: host.kind,
        hostApiUrl: apiUrl.replace(/\/+$/, ''),
        hostRepository,
        revertBaseBranch: input.baseBranch ?? null,
      },
    });
    await this.audit.record({
      actor,
      action: 'repository.write-access-set',
      scope: `repository:${repo.url}`,
      details: { type: credentials.type, host: host.kind, apiUrl, repository: hostRepository },
    });
    return this.get(id);
  }

  async clear(id: string, actor: AuditActor): Promise<void> {
    const repo = await this.db.prisma.repository.findUnique({ where: { id } });
    if (!repo) throw HubError.notFound('repository', id);
    await this.db.prisma.repository.update({
      where: { id },
      data: {
        writeCredentialType: null,
        writeCredentialUsername: null,
        writeCredentialCiphertext: null,
        hostApiTokenCiphertext: null,
        hostKind: null,
        hostApiUrl: null,
        hostRepository: null,
        revertBaseBranch: null,
      },
    });
    await this.audit.record({
      actor,
      action: 'repository.write-access-removed',
      scope: `repository:${repo.url}`,
    });
  }

  async get(id: string): Promise<WriteAccessView> {
    const repo = await this.db.prisma.repository.findUnique({ where: { id } });
    if (!repo) throw HubError.notFound('repository', id);
    const view = viewOf(repo);
    if (!view) throw new HubError(404, 'not-found', `repository ${repo.url} has no write access`, 'id');
    return view;
  }

  /** The write access of the repository at `url`, opened; 409 `no-write-access` naming it when there is none. */
  async open(url: string): Promise<OpenedWriteAccess & { repositoryId: string }> {
    const r = await this.db.prisma.repository.findUnique({ where: { url } });
    if (!r || !r.writeCredentialCiphertext || !r.hostKind || !r.hostApiUrl || !r.hostRepository)
      throw new HubError(
        409,
        'no-write-access',
        `repository ${url} has no write access: give the hub a token or deploy key (PUT /api/v1/repositories/${r?.id ?? '<id>'}/write-access)`,
        'repository',
      );
    try {
      const secret = this.cipher.open(r.writeCredentialCiphertext, writeContext(r.id));
      const push: GitAuth =
        r.writeCredentialType === 'ssh-key'
          ? { type: 'ssh-key', privateKey: secret }
          : { type: 'https-token', username: r.writeCredentialUsername ?? '', token: secret };
      const token = r.hostApiTokenCiphertext
        ? this.cipher.open(r.hostApiTokenCiphertext, apiTokenContext(r.id))
        : secret;
      return {
        repositoryId: r.id,
        push,
        host: { kind: r.hostKind as GitHostKind, apiUrl: r.hostApiUrl, repository: r.hostRepository, token },
        baseBranch: r.revertBaseBranch,
      };
    } catch (e) {
      if (!(e instanceof CredentialCipherError)) throw e;
      throw new HubError(
        409,
        'no-write-access',
        `repository ${url}: cannot use the stored write access: ${e.message}`,
        'repository',
      );
    }
  }
}

function viewOf(r: Repository): WriteAccessView | null {
  if (!r.writeCredentialType || !r.hostKind || !r.hostApiUrl || !r.hostRepository) return null;
  return {
    repository: r.url,
    credentials: {
      type: r.writeCredentialType === 'ssh-key' ? 'ssh-key' : 'https-token',
      username: r.writeCredentialUsername,
    },
    host: {
      kind: r.hostKind as GitHostKind,
      apiUrl: r.hostApiUrl,
      repository: r.hostRepository,
      hasApiToken: r.hostApiTokenCiphertext !== null,
    },
    baseBranch: r.revertBaseBranch,
  };
}

/** Bound into each ciphertext: a write credential opens only as that, on its own repository's row. */
function writeContext(repositoryId: string): string {
  return `repository-write:${repositoryId}`;
}

function apiTokenContext(repositoryId: string): string {
  return `repository-host-api:${repositoryId}`;
}
