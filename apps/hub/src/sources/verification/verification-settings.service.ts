import type {
  AuditActor,
  RepositoryVerification,
  RepositoryVerificationChange,
  RepositoryVerificationView,
  VerificationMode,
} from '@flotilla/contract';
import { createHash } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { AuditLog } from '../../audit/audit.service.js';
import { HubError } from '../../common/hub-error.js';
import { Database } from '../../db/database.js';
import { ExpansionRequests } from '../../wakeups/expansion-requests.service.js';
import type { Repository } from '../../generated/prisma/client.js';
import { RepositoriesService } from '../repositories/repositories.service.js';
import { withoutCredentials } from '../repositories/repository-url.js';
import { AllowedSignersError, parseAllowedSigners } from '@flotilla/fleet-config';
import { CommitVerifierError, gpgFingerprints } from './commit-verifier.js';

/**
 * A repository's verification mode and allowed keys. Each change is checked whole before anything is
 * stored (a bad line or an unknown mode changes nothing), kept as a new version in
 * `RepositoryVerificationChange` (who, when, the keys and their fingerprints; earlier versions stay),
 * audited as `repository.verification-set` with the fingerprints before and after, and asks every
 * appset reading the repository to expand again: a removed key stops the next release.
 */
@Injectable()
export class VerificationSettingsService {
  constructor(
    private readonly db: Database,
    private readonly audit: AuditLog,
    private readonly expansions: ExpansionRequests,
    private readonly repos: RepositoriesService,
  ) {}

  /** A person's change through the API; refused (409) while a fleet repository declares the settings. */
  async set(
    repositoryId: string,
    settings: RepositoryVerification,
    actor: AuditActor,
  ): Promise<RepositoryVerificationView> {
    const repo = await this.db.prisma.repository.findUnique({ where: { id: repositoryId } });
    if (!repo) throw HubError.notFound('repository', repositoryId);
    if (repo.verificationManagedBy === 'git')
      throw new HubError(
        409,
        'managed-by-git',
        `the verification of ${withoutCredentials(repo.url)} is declared by a fleet repository (a SourceVerification object): change it there`,
        'mode',
      );
    await this.store(repo, settings, actor, null);
    return this.get(repositoryId);
  }

  /**
   * A fleet commit's SourceVerification for `url` (registered if new), or its removal (`null`: back
   * to `none`, and to the API's hands). Checked like the API's (a bad GPG keyring is a HubError).
   */
  async setFromFleet(url: string, settings: RepositoryVerification | null, actor: AuditActor): Promise<void> {
    const repo = await this.repos.register(url, actor);
    const next = settings ?? { mode: 'none' as const, allowedSigners: '', gpgKeys: '' };
    await this.store(repo, next, actor, settings ? 'git' : null);
  }

  private async store(
    repo: Repository,
    settings: RepositoryVerification,
    actor: AuditActor,
    managedBy: 'git' | null,
  ): Promise<void> {
    const fingerprints = await checkedFingerprints(settings);
    const previous = await this.latestChange(repo.id);
    await this.db.prisma.$transaction(async (tx) => {
      await tx.repository.update({
        where: { id: repo.id },
        data: {
          verificationMode: settings.mode,
          allowedSigners: settings.allowedSigners,
          gpgKeys: settings.gpgKeys,
          verificationDigest: verificationDigest(settings),
          verificationManagedBy: managedBy,
        },
      });
      await tx.repositoryVerificationChange.create({
        data: { repositoryId: repo.id, actor, ...settings, fingerprints },
      });
      await this.audit.record(
        {
          actor,
          action: 'repository.verification-set',
          scope: `repository:${withoutCredentials(repo.url)}`,
          details: {
            mode: settings.mode,
            fingerprints,
            managedBy,
            previous: { mode: repo.verificationMode, fingerprints: previous?.fingerprints ?? [] },
          },
        },
        tx,
      );
    });
    await this.expansions.requestExpandForRepository(repo.url);
  }

  async get(repositoryId: string): Promise<RepositoryVerificationView> {
    const repo = await this.db.prisma.repository.findUnique({ where: { id: repositoryId } });
    if (!repo) throw HubError.notFound('repository', repositoryId);
    const last = await this.latestChange(repositoryId);
    return {
      repository: repo.url,
      mode: repo.verificationMode as VerificationMode,
      allowedSigners: repo.allowedSigners,
      gpgKeys: repo.gpgKeys,
      fingerprints: last?.fingerprints ?? [],
      managedBy: repo.verificationManagedBy,
      setBy: last?.actor ?? null,
      setAt: last?.createdAt.toISOString() ?? null,
    };
  }

  /** Every version, newest first: what the keys were, who set them, when. */
  async history(repositoryId: string): Promise<RepositoryVerificationChange[]> {
    const repo = await this.db.prisma.repository.findUnique({ where: { id: repositoryId } });
    if (!repo) throw HubError.notFound('repository', repositoryId);
    const rows = await this.db.prisma.repositoryVerificationChange.findMany({
      where: { repositoryId },
      orderBy: { createdAt: 'desc' },
    });
    return rows.map((r) => ({
      mode: r.mode as VerificationMode,
      allowedSigners: r.allowedSigners,
      gpgKeys: r.gpgKeys,
      fingerprints: r.fingerprints,
      setBy: r.actor,
      setAt: r.createdAt.toISOString(),
    }));
  }

  private latestChange(repositoryId: string) {
    return this.db.prisma.repositoryVerificationChange.findFirst({
      where: { repositoryId },
      orderBy: { createdAt: 'desc' },
    });
  }
}

/** The allowed keys' fingerprints; 400 naming the field and line of the first bad key. */
async function checkedFingerprints(settings: RepositoryVerification): Promise<string[]> {
  let ssh: string[];
  try {
    ssh = parseAllowedSigners(settings.allowedSigners).map((s) => s.fingerprint);
  } catch (e) {
    if (e instanceof AllowedSignersError)
      throw new HubError(400, 'invalid-allowed-signers', `allowedSigners ${e.message}`, 'allowedSigners');
    throw e;
  }
  const gpg = await checkedGpgKeyring(settings.gpgKeys);
  if (settings.mode !== 'none' && ssh.length + gpg.length === 0)
    throw new HubError(
      400,
      'no-allowed-keys',
      `allowedSigners: mode ${settings.mode} needs at least one allowed key (allowedSigners or gpgKeys)`,
      'allowedSigners',
    );
  return [...ssh, ...gpg];
}

/**
 * The GPG keyring's fingerprints (none for an empty one); 400 `invalid-gpg-keys` naming `field` when
 * it holds no public key. Shared by commit signatures and Helm provenance settings.
 */
export async function checkedGpgKeyring(gpgKeys: string, field = 'gpgKeys'): Promise<string[]> {
  if (gpgKeys.trim() === '') return [];
  try {
    return await gpgFingerprints(gpgKeys);
  } catch (e) {
    if (e instanceof CommitVerifierError)
      throw new HubError(
        400,
        'invalid-gpg-keys',
        `${field}: not an armored public keyring: ${e.message}`,
        field,
      );
    throw e;
  }
}

/** The cache key part of a setting: any change to the mode or either list gives another digest. */
export function verificationDigest(s: RepositoryVerification): string {
  if (s.mode === 'none') return '';
  return createHash('sha256')
    .update(JSON.stringify([s.mode, s.allowedSigners, s.gpgKeys]))
    .digest('hex');
}
