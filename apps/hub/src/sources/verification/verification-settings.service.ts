import { createHash } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import type {
  RepositoryVerification,
  RepositoryVerificationChange,
  RepositoryVerificationView,
  VerificationMode,
} from '@flotilla/contract';
import { AuditLog } from '../../audit/audit.service.js';
import { HubError } from '../../common/hub-error.js';
import { Database } from '../../db/database.js';
import { ExpansionRequests } from '../../wakeups/expansion-requests.service.js';
import { withoutCredentials } from '../repositories/repository-url.js';
import { AllowedSignersError, parseAllowedSigners } from './allowed-signers.js';
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
  ) {}

  async set(
    repositoryId: string,
    settings: RepositoryVerification,
    actor: string,
  ): Promise<RepositoryVerificationView> {
    const repo = await this.db.prisma.repository.findUnique({ where: { id: repositoryId } });
    if (!repo) throw HubError.notFound('repository', repositoryId);
    const fingerprints = await checkedFingerprints(settings);
    const previous = await this.latestChange(repositoryId);
    const digest = verificationDigest(settings);
    await this.db.prisma.$transaction(async (tx) => {
      await tx.repository.update({
        where: { id: repositoryId },
        data: {
          verificationMode: settings.mode,
          allowedSigners: settings.allowedSigners,
          gpgKeys: settings.gpgKeys,
          verificationDigest: digest,
        },
      });
      await tx.repositoryVerificationChange.create({
        data: { repositoryId, actor, ...settings, fingerprints },
      });
      await this.audit.record(
        {
          actor,
          action: 'repository.verification-set',
          scope: `repository:${withoutCredentials(repo.url)}`,
          details: {
            mode: settings.mode,
            fingerprints,
            previous: { mode: repo.verificationMode, fingerprints: previous?.fingerprints ?? [] },
          },
        },
        tx,
      );
    });
    await this.expansions.requestExpandForRepository(repo.url);
    return this.get(repositoryId);
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
  let gpg: string[] = [];
  if (settings.gpgKeys.trim() !== '') {
    try {
      gpg = await gpgFingerprints(settings.gpgKeys);
    } catch (e) {
      if (e instanceof CommitVerifierError)
        throw new HubError(
          400,
          'invalid-gpg-keys',
          `gpgKeys: not an armored public keyring: ${e.message}`,
          'gpgKeys',
        );
      throw e;
    }
  }
  if (settings.mode !== 'none' && ssh.length + gpg.length === 0)
    throw new HubError(
      400,
      'no-allowed-keys',
      `allowedSigners: mode ${settings.mode} needs at least one allowed key (allowedSigners or gpgKeys)`,
      'allowedSigners',
    );
  return [...ssh, ...gpg];
}

/** The cache key part of a setting: any change to the mode or either list gives another digest. */
export function verificationDigest(s: RepositoryVerification): string {
  if (s.mode === 'none') return '';
  return createHash('sha256')
    .update(JSON.stringify([s.mode, s.allowedSigners, s.gpgKeys]))
    .digest('hex');
}
