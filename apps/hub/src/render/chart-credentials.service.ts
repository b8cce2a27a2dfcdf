import type {
  AuditActor,
  ChartRepositoryCredentials,
  ChartRepositoryCredentialsView,
} from '@flotilla/contract';
import { Inject, Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import type { RegistryCredentials } from '@flotilla/manifests/node';
import { AuditLog } from '../audit/audit.service.js';
import { HubError } from '../common/hub-error.js';
import { HUB_CONFIG, type HubConfig } from '../config/hub-config.js';
import { Database } from '../db/database.js';
import { CredentialCipher, CredentialCipherError } from '../sources/git/credential-cipher.js';

const context = (id: string) => `chart-repository:${id}`;

/** How long a replica reuses the credential list before reading it again (a change elsewhere shows within it). */
const CACHE_MS = 5_000;

/**
 * Credentials for charts from Helm repositories and OCI registries: sealed at rest with the hub's
 * secrets key, never returned, and matched to a URL by its longest configured prefix (on a path
 * boundary), so `oci://ghcr.io/org` covers every chart of that organisation.
 */
@Injectable()
export class ChartCredentialsService implements OnModuleInit {
  private readonly logger = new Logger(ChartCredentialsService.name);
  private readonly cipher: CredentialCipher;
  private cache:
    | { at: number; rows: Promise<{ id: string; url: string; username: string; secretCiphertext: string }[]> }
    | undefined;

  constructor(
    private readonly db: Database,
    private readonly audit: AuditLog,
    @Inject(HUB_CONFIG) config: HubConfig,
  ) {
    this.cipher = new CredentialCipher(config.secrets.key, config.secrets.previousKeys);
  }

  /** Key rotation: what was sealed with a previous key is sealed again with the current one. */
  async onModuleInit(): Promise<void> {
    if (!this.cipher.canSeal) return;
    for (const r of await this.db.prisma.chartRepositoryCredential.findMany()) {
      if (!this.cipher.isStale(r.secretCiphertext)) continue;
      try {
        const plain = this.cipher.open(r.secretCiphertext, context(r.id));
        await this.db.prisma.chartRepositoryCredential.updateMany({
          where: { id: r.id, secretCiphertext: r.secretCiphertext },
          data: { secretCiphertext: this.cipher.seal(plain, context(r.id)) },
        });
      } catch (e) {
        if (!(e instanceof CredentialCipherError)) throw e;
        this.logger.warn(`chart repository ${r.url}: credentials cannot be resealed: ${e.message}`);
      }
    }
  }

  async list(): Promise<ChartRepositoryCredentialsView[]> {
    const rows = await this.db.prisma.chartRepositoryCredential.findMany({ orderBy: { url: 'asc' } });
    return rows.map(view);
  }

  /** Stores or replaces the credentials for `url`; audited without the secret. */
  async set(input: ChartRepositoryCredentials, actor: AuditActor): Promise<ChartRepositoryCredentialsView> {
    if (!this.cipher.canSeal) {
      throw new HubError(
        503,
        'secrets-key-missing',
        'FLOTILLA_SECRETS_KEY is not set on the hub: chart repository credentials cannot be stored',
        'password',
      );
    }
    const row = await this.db.prisma.$transaction(async (tx) => {
      const existing = await tx.chartRepositoryCredential.findUnique({ where: { url: input.url } });
      const id = existing?.id ?? crypto.randomUUID();
      const data = {
        username: input.username,
        secretCiphertext: this.cipher.seal(input.password, context(id)),
      };
      const saved = existing
        ? await tx.chartRepositoryCredential.update({ where: { id }, data })
        : await tx.chartRepositoryCredential.create({ data: { id, url: input.url, ...data } });
      await this.audit.record(
        {
          actor,
          action: 'chart-repository.credentials-set',
          scope: `chart-repository:${input.url}`,
          details: { username: input.username },
        },
        tx,
      );
      return saved;
    });
    this.cache = undefined;
    return view(row);
  }

  async remove(id: string, actor: AuditActor): Promise<void> {
    await this.db.prisma.$transaction(async (tx) => {
      const row = await tx.chartRepositoryCredential.findUnique({ where: { id } });
      if (!row) throw HubError.notFound('chart repository credentials', id);
      await tx.chartRepositoryCredential.delete({ where: { id } });
      await this.audit.record(
        { actor, action: 'chart-repository.credentials-removed', scope: `chart-repository:${row.url}` },
        tx,
      );
    });
    this.cache = undefined;
  }

  /** The credentials to send for `url`, if a configured prefix covers it. */
  async forUrl(url: string): Promise<RegistryCredentials | undefined> {
    const now = Date.now();
    if (!this.cache || now - this.cache.at > CACHE_MS) {
      const rows = this.db.prisma.chartRepositoryCredential.findMany({
        select: { id: true, url: true, username: true, secretCiphertext: true },
      });
      rows.catch(() => (this.cache = undefined));
      this.cache = { at: now, rows };
    }
    const best = (await this.cache.rows)
      .filter((r) => covers(r.url, url))
      .sort((a, b) => b.url.length - a.url.length)[0];
    if (!best) return undefined;
    return { username: best.username, password: this.cipher.open(best.secretCiphertext, context(best.id)) };
  }
}

/** `prefix` covers `url` when it is `url` itself or `url` goes on below it (`/`, `?` or `#`). */
export function covers(prefix: string, url: string): boolean {
  if (!url.startsWith(prefix)) return false;
  const next = url.charAt(prefix.length);
  return next === '' || next === '/' || next === '?' || next === '#';
}

function view(r: {
  id: string;
  url: string;
  username: string;
  createdAt: Date;
  updatedAt: Date;
}): ChartRepositoryCredentialsView {
  return {
    id: r.id,
    url: r.url,
    username: r.username,
    createdAt: r.createdAt.toISOString(),
    updatedAt: r.updatedAt.toISOString(),
  };
}
