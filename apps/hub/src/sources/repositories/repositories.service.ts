import {
  verificationModeSchema,
  type AuditActor,
  systemActor,
  type RepositoryView,
} from '@flotilla/contract';
import { randomUUID } from 'node:crypto';
import { Inject, Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import { z } from 'zod';
import { HUB_CONFIG, type HubConfig } from '../../config/hub-config.js';
import { Database } from '../../db/database.js';
import { HubError } from '../../common/hub-error.js';
import { keyPageArgs, keyPageOf, type PageKey, type PageQuery } from '../../common/name-page.js';
import { AuditLog } from '../../audit/audit.service.js';
import { CredentialCipher, CredentialCipherError } from '../git/credential-cipher.js';
import type { GitAuth } from '../git/git-credentials.js';
import { GitMirrorError } from '../git/git-mirror.js';
import { GitMirrorsService } from '../git/git-mirrors.service.js';
import { JobQueues } from '../../queues/job-queues.service.js';
import type { Repository } from '../../generated/prisma/client.js';
import { pruneUntrackedRefs, resolveInMirror, storeResolvedRefs, trackedRefs } from './repository-refs.js';
import { repositoryUrlProblem, type LocalRepositoryPolicy } from './repository-url.js';

/** Repository credentials as an admin gives them; stored sealed, never shown again. */
export const repositoryCredentialsSchema = z.discriminatedUnion('type', [
  z
    .object({
      type: z.literal('https-token'),
      username: z.string().min(1).max(256),
      token: z.string().min(1).max(8192),
    })
    .strict(),
  z
    .object({
      type: z.literal('ssh-key'),
      privateKey: z
        .string()
        .max(64 * 1024)
        .refine((k) => /-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(k), {
          message: 'must be a PEM/OpenSSH private key (-----BEGIN ... PRIVATE KEY-----)',
        }),
    })
    .strict(),
]);
export type RepositoryCredentials = z.output<typeof repositoryCredentialsSchema>;

/** The URL itself is judged by `checkUrl` (repository-url.ts), which needs the hub's policy. */
export const registerRepositorySchema = z.object({
  credentials: repositoryCredentialsSchema.optional(),
  url: z.string().min(1),
});

export interface SyncResult {
  ok: boolean;
  changed: boolean;
  error?: string;
}

/**
 * Repositories the hub mirrors, their fetch status, the commits their tracked refs point at, and
 * their credentials (sealed with FLOTILLA_SECRETS_KEY, opened only for the length of a fetch).
 */
@Injectable()
export class RepositoriesService implements OnModuleInit {
  private readonly logger = new Logger(RepositoriesService.name);
  private readonly cipher: CredentialCipher;

  constructor(
    private readonly db: Database,
    private readonly mirrors: GitMirrorsService,
    private readonly queues: JobQueues,
    private readonly audit: AuditLog,
    @Inject(HUB_CONFIG) private readonly config: HubConfig,
  ) {
    this.cipher = new CredentialCipher(config.secrets.key, config.secrets.previousKeys);
    this.localPolicy = { allowed: config.git.localRepositories, dataDir: config.dataDir };
  }

  private readonly localPolicy: LocalRepositoryPolicy;

  /**
   * Refuses a URL no repository may have (see repositoryUrlProblem): 400 `invalid-repository-url`
   * naming `path`, the field it came from. Every way a URL enters calls this before storing it.
   */
  checkUrl(url: string, path = 'url'): void {
    const problem = repositoryUrlProblem(url, this.localPolicy);
    if (problem)
      throw new HubError(400, 'invalid-repository-url', `${path}: the repository URL ${problem}`, path);
  }

  /**
   * Key rotation: credentials sealed with a key now in FLOTILLA_SECRETS_KEY_PREVIOUS are sealed again
   * with the current key, so the previous one can be dropped at the next restart.
   */
  async onModuleInit(): Promise<void> {
    if (!this.cipher.canSeal) return;
    const sealed = await this.db.prisma.repository.findMany({
      where: { credentialCiphertext: { not: null } },
      select: { id: true, url: true, credentialCiphertext: true },
    });
    let resealed = 0;
    for (const r of sealed) {
      if (!r.credentialCiphertext || !this.cipher.isStale(r.credentialCiphertext)) continue;
      try {
        const plain = this.cipher.open(r.credentialCiphertext, credentialContext(r.id));
        // Only if nobody changed it meanwhile (another replica resealing, an admin replacing it).
        const { count } = await this.db.prisma.repository.updateMany({
          where: { id: r.id, credentialCiphertext: r.credentialCiphertext },
          data: { credentialCiphertext: this.cipher.seal(plain, credentialContext(r.id)) },
        });
        resealed += count;
      } catch (e) {
        if (!(e instanceof CredentialCipherError)) throw e;
        this.logger.warn(`repository ${r.url}: credentials cannot be resealed: ${e.message}`);
      }
    }
    if (resealed > 0)
      this.logger.log(`resealed the credentials of ${resealed} repositories with the current key`);
  }

  /** Stores (replaces) a repository's credentials, sealed; audited without the secret. */
  async setCredentials(id: string, credentials: RepositoryCredentials, actor: AuditActor) {
    const repo = await this.db.prisma.repository.findUnique({ where: { id } });
    if (!repo) throw HubError.notFound('repository', id);
    await this.db.prisma.repository.update({ where: { id }, data: this.sealed(id, credentials) });
    await this.audit.record({
      actor,
      action: 'repository.credentials-set',
      scope: `repository:${repo.url}`,
      details: {
        type: credentials.type,
        ...(credentials.type === 'https-token' && { username: credentials.username }),
      },
    });
    return this.get(id);
  }

  async clearCredentials(id: string, actor: AuditActor) {
    const repo = await this.db.prisma.repository.findUnique({ where: { id } });
    if (!repo) throw HubError.notFound('repository', id);
    await this.db.prisma.repository.update({
      where: { id },
      data: { credentialType: null, credentialUsername: null, credentialCiphertext: null },
    });
    await this.audit.record({
      actor,
      action: 'repository.credentials-removed',
      scope: `repository:${repo.url}`,
    });
    return this.get(id);
  }

  /**
   * Registers a URL (idempotent) and, when it is new, schedules its polling and a first fetch.
   * `credentials` are sealed into the new row before that fetch; for a known URL they replace the
   * stored ones and a fetch is queued. `neededBy` says what named the URL (`appset:web`), for the
   * audit event: the actor is who or what asked, never the thing itself.
   */
  async register(
    url: string,
    actor: AuditActor,
    credentials?: RepositoryCredentials,
    neededBy?: string,
  ): Promise<Repository> {
    this.checkUrl(url);
    const existing = await this.db.prisma.repository.findUnique({ where: { url } });
    if (existing) {
      if (credentials) {
        await this.setCredentials(existing.id, credentials, actor);
        await this.refresh(existing.id);
      }
      return existing;
    }
    const id = randomUUID();
    let repo: Repository;
    try {
      repo = await this.db.prisma.repository.create({
        data: { id, url, ...(credentials && this.sealed(id, credentials)) },
      });
    } catch {
      // Another request registered it at the same moment.
      return this.db.prisma.repository.findUniqueOrThrow({ where: { url } });
    }
    await this.audit.record({
      actor,
      action: 'repository.registered',
      scope: `repository:${url}`,
      details: { ...(credentials && { credentials: credentials.type }), ...(neededBy && { neededBy }) },
    });
    await this.queues.schedulePoll(repo.id, this.config.sources.pollIntervalSeconds);
    await this.queues.enqueue('source-sync', { repositoryId: repo.id, reason: 'manual' });
    return repo;
  }

  async list() {
    const repos = await this.db.prisma.repository.findMany({
      orderBy: { url: 'asc' },
      include: { refs: true },
    });
    return repos.map((r) => this.view(r));
  }

  /** One page of repositories by URL (see common/name-page.ts). */
  async page(q: PageQuery) {
    const key: PageKey<Repository> = { field: 'url', order: 'asc', of: (r) => r.url };
    const page = keyPageOf(
      await this.db.prisma.repository.findMany({ ...keyPageArgs(q, key), include: { refs: true } }),
      q,
      key,
    );
    return { items: page.rows.map((r) => this.view(r)), nextCursor: page.nextCursor };
  }

  async get(id: string) {
    const repo = await this.db.prisma.repository.findUnique({ where: { id }, include: { refs: true } });
    if (!repo) throw HubError.notFound('repository', id);
    return this.view(repo);
  }

  async refresh(id: string) {
    const repo = await this.db.prisma.repository.findUnique({ where: { id } });
    if (!repo) throw HubError.notFound('repository', id);
    // A manual refresh must run even if a poll of this repository is already queued.
    await this.queues.enqueue(
      'source-sync',
      { repositoryId: id, reason: 'manual' },
      { variant: `manual.${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}` },
    );
    return { repositoryId: id, queued: true };
  }

  /**
   * Fetches the mirror and resolves every tracked ref. A failed fetch keeps the last good commits and
   * records the error on the repository. `changed` tells whether any tracked ref moved.
   */
  async syncNow(repositoryId: string): Promise<SyncResult> {
    const repo = await this.db.prisma.repository.findUnique({ where: { id: repositoryId } });
    if (!repo) return { ok: false, changed: false, error: 'repository no longer exists' };
    // When the fetch asked the remote, on the database's clock (one clock for every replica): two
    // replicas fetching one repository record what they saw in the order they asked, not the order
    // they finished, so a slow fetch of an older commit never moves a ref back.
    const startedAt = await this.databaseNow();
    try {
      // Again at each fetch: a row stored before the check existed, or a link moved since.
      const problem = repositoryUrlProblem(repo.url, this.localPolicy);
      if (problem)
        throw new GitMirrorError('fetch-failed', `refused to fetch: the repository URL ${problem}`);
      await this.mirrors.mirrors.fetch(repo.id, repo.url, this.authOf(repo));
    } catch (e) {
      const error =
        e instanceof GitMirrorError
          ? e.message
          : e instanceof CredentialCipherError
            ? `cannot use the stored credentials: ${e.message}`
            : String(e);
      await this.db.prisma.repository.update({
        where: { id: repo.id },
        data: { status: 'Error', error, lastAttemptAt: new Date() },
      });
      if (repo.status !== 'Error' || repo.error !== error) {
        await this.audit.record({
          actor: systemActor('repository-poll'),
          action: 'repository.fetch-failed',
          scope: `repository:${repo.url}`,
          details: { error },
        });
      }
      return { ok: false, changed: false, error };
    }
    const tracked = await trackedRefs(this.db.prisma, repo.url);
    const resolved = resolveInMirror(this.mirrors.mirrors, repo.id, tracked);
    let changed = false;
    await this.db.prisma.$transaction(async (tx) => {
      // Replicas recording fetches of this repository take turns; a fetch that began before the one
      // already recorded saw an older remote and writes nothing.
      const [current] = await tx.$queryRaw<{ lastFetchedAt: Date | null }[]>`
        SELECT "lastFetchedAt" FROM "Repository" WHERE "id" = ${repo.id} FOR UPDATE`;
      if (!current || (current.lastFetchedAt !== null && current.lastFetchedAt > startedAt)) return;
      const { moved } = await storeResolvedRefs(tx, repo.id, resolved, startedAt);
      changed = moved || current.lastFetchedAt === null;
      await pruneUntrackedRefs(tx, repo.id, tracked, startedAt);
      await tx.repository.update({
        where: { id: repo.id },
        data: { status: 'Ready', error: null, lastFetchedAt: startedAt, lastAttemptAt: new Date() },
      });
    });
    return { ok: true, changed };
  }

  /**
   * Brings this replica's mirror up to the remote and records nothing: for an expansion whose
   * replica lacks a commit another replica recorded (refs are shared, mirrors are per replica).
   */
  async fetchMirror(repositoryId: string): Promise<void> {
    const repo = await this.db.prisma.repository.findUniqueOrThrow({ where: { id: repositoryId } });
    const problem = repositoryUrlProblem(repo.url, this.localPolicy);
    if (problem) throw new GitMirrorError('fetch-failed', `refused to fetch: the repository URL ${problem}`);
    await this.mirrors.mirrors.fetch(repo.id, repo.url, this.authOf(repo));
  }

  /**
   * Fetches this replica's mirror and records the commits `refs` name now, for an expansion asking
   * for refs no poll keeps fresh (never tracked, or pruned since nothing read them): their newest
   * commits, not what a row said when they were last read. Returns ref → the commit now recorded,
   * without the refs the remote does not have. The repository's own poll state is left alone.
   */
  async recordRefs(repositoryId: string, refs: string[]): Promise<Map<string, string>> {
    const startedAt = await this.databaseNow();
    await this.fetchMirror(repositoryId);
    const resolved = resolveInMirror(this.mirrors.mirrors, repositoryId, refs);
    if (resolved.size === 0) return resolved;
    return this.db.prisma.$transaction(async (tx) => {
      // Takes its turn with the polls recording this repository (see syncNow).
      await tx.$queryRaw`SELECT "id" FROM "Repository" WHERE "id" = ${repositoryId} FOR UPDATE`;
      return (await storeResolvedRefs(tx, repositoryId, resolved, startedAt)).stored;
    });
  }

  /** Now on the database's clock: one clock for every replica. */
  private async databaseNow(): Promise<Date> {
    const [row] = await this.db.prisma.$queryRaw<{ now: Date }[]>`SELECT clock_timestamp() AS "now"`;
    return row?.now ?? new Date();
  }

  /** The credential columns for `credentials`, sealed for the row `id`. */
  private sealed(id: string, credentials: RepositoryCredentials) {
    if (!this.cipher.canSeal) {
      throw new HubError(
        503,
        'secrets-key-missing',
        'FLOTILLA_SECRETS_KEY is not set on the hub: repository credentials cannot be stored',
        'credentials',
      );
    }
    const secret = credentials.type === 'https-token' ? credentials.token : credentials.privateKey;
    return {
      credentialType: credentials.type,
      credentialUsername: credentials.type === 'https-token' ? credentials.username : null,
      credentialCiphertext: this.cipher.seal(secret, credentialContext(id)),
    };
  }

  /** The repository's credentials, opened for one fetch (throws CredentialCipherError). */
  private authOf(r: Repository): GitAuth | undefined {
    if (!r.credentialType || !r.credentialCiphertext) return undefined;
    const secret = this.cipher.open(r.credentialCiphertext, credentialContext(r.id));
    return r.credentialType === 'ssh-key'
      ? { type: 'ssh-key', privateKey: secret }
      : { type: 'https-token', username: r.credentialUsername ?? '', token: secret };
  }

  private view(r: Repository & { refs: { ref: string; sha: string; resolvedAt: Date }[] }): RepositoryView {
    return {
      id: r.id,
      url: r.url,
      // Never the secret: whether there is one, its kind, and the (public) HTTPS username.
      hasCredentials: r.credentialCiphertext !== null,
      credentials: r.credentialType ? { type: r.credentialType, username: r.credentialUsername } : null,
      status: r.status,
      error: r.error,
      lastFetchedAt: r.lastFetchedAt?.toISOString() ?? null,
      lastAttemptAt: r.lastAttemptAt?.toISOString() ?? null,
      refs: Object.fromEntries(r.refs.map((x) => [x.ref, x.sha])),
      lastFetchedCommit: r.refs.find((x) => x.ref === 'HEAD')?.sha ?? null,
      // The keys themselves: GET /api/v1/repositories/:id/verification.
      verificationMode: verificationModeSchema.parse(r.verificationMode),
    };
  }
}

/** Bound into each ciphertext, so a sealed credential only opens on its own repository's row. */
function credentialContext(repositoryId: string): string {
  return `repository:${repositoryId}`;
}
