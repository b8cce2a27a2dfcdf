import type {
  AuditActor,
  ChartRepositoryVerification,
  ChartRepositoryVerificationChange,
  ChartRepositoryVerificationView,
  ChartVerifySetting,
} from '@flotilla/contract';
import { createHash } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { AuditLog } from '../../audit/audit.service.js';
import { HubError } from '../../common/hub-error.js';
import { Database } from '../../db/database.js';
import type {
  ChartRepositoryVerification as SettingRow,
  ChartRepositoryVerificationChange as SettingChangeRow,
} from '../../generated/prisma/client.js';
import { ExpansionRequests } from '../../wakeups/expansion-requests.service.js';
import { checkedGpgKeyring } from './verification-settings.service.js';

/** A chart repository URL as settings and verdicts are stored under: without a trailing slash. */
export function storedChartRepositoryUrl(url: string): string {
  return url.replace(/\/+$/, '');
}

/** A chart repository's URL as settings and verdicts key it: the scheme checked, no trailing slash. */
export function chartRepositoryKey(url: string, field = 'url'): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new HubError(400, 'invalid-chart-repository-url', `${field}: "${url}" is not a URL`, field);
  }
  if (!['http:', 'https:', 'oci:'].includes(parsed.protocol))
    throw new HubError(
      400,
      'invalid-chart-repository-url',
      `${field}: a chart repository is http(s):// or oci://, not ${parsed.protocol}//`,
      field,
    );
  if (parsed.username || parsed.password)
    throw new HubError(
      400,
      'invalid-chart-repository-url',
      `${field}: credentials do not belong in the URL (flotilla chart-repositories add)`,
      field,
    );
  return storedChartRepositoryUrl(url);
}

/**
 * Helm provenance settings per chart repository URL: `verify` and the allowed GPG keys. Checked whole
 * before anything is stored, as a Git repository's verification settings are (the same keyring
 * check); each change is kept as a new version (`ChartRepositoryVerificationChange`), audited as
 * `chart-repository.verification-set` with the fingerprints before and after, and asks every appset
 * rendering a chart of the repository to expand again.
 */
@Injectable()
export class ChartVerificationSettingsService {
  constructor(
    private readonly db: Database,
    private readonly audit: AuditLog,
    private readonly expansions: ExpansionRequests,
  ) {}

  async set(input: ChartRepositoryVerification, actor: AuditActor): Promise<ChartRepositoryVerificationView> {
    const url = chartRepositoryKey(input.url);
    const fingerprints = await checkedGpgKeyring(input.gpgKeys);
    if (input.verify !== 'none' && fingerprints.length === 0)
      throw new HubError(
        400,
        'no-allowed-keys',
        `gpgKeys: verify ${input.verify} needs at least one allowed key`,
        'gpgKeys',
      );
    const before = await this.db.prisma.chartRepositoryVerification.findUnique({ where: { url } });
    const setting = { verify: input.verify, gpgKeys: input.gpgKeys, fingerprints };
    await this.db.prisma.$transaction(async (tx) => {
      const row = { ...setting, digest: chartSettingDigest(input.verify, input.gpgKeys) };
      await tx.chartRepositoryVerification.upsert({ where: { url }, create: { url, ...row }, update: row });
      await tx.chartRepositoryVerificationChange.create({ data: { url, actor, ...setting } });
      await this.audit.record(
        {
          actor,
          action: 'chart-repository.verification-set',
          scope: `chart-repository:${url}`,
          details: {
            url,
            verify: input.verify,
            fingerprints,
            previous: { verify: before?.verify ?? 'none', fingerprints: before?.fingerprints ?? [] },
          },
        },
        tx,
      );
    });
    await this.requestExpansions(url);
    return this.get(url);
  }

  async get(rawUrl: string): Promise<ChartRepositoryVerificationView> {
    const url = chartRepositoryKey(rawUrl);
    const row = await this.db.prisma.chartRepositoryVerification.findUnique({ where: { url } });
    if (!row) return { url, verify: 'none', gpgKeys: '', fingerprints: [], setBy: null, setAt: null };
    const last = await this.db.prisma.chartRepositoryVerificationChange.findFirst({
      where: { url },
      orderBy: { createdAt: 'desc' },
    });
    return viewOf(row, last ?? undefined);
  }

  /** Every repository with a setting, by URL. */
  async list(): Promise<ChartRepositoryVerificationView[]> {
    const [rows, lastChanges] = await Promise.all([
      this.db.prisma.chartRepositoryVerification.findMany({ orderBy: { url: 'asc' } }),
      // Each repository's newest change, in one statement (DISTINCT ON url).
      this.db.prisma.chartRepositoryVerificationChange.findMany({
        distinct: ['url'],
        orderBy: [{ url: 'asc' }, { createdAt: 'desc' }],
      }),
    ]);
    const lastOf = new Map(lastChanges.map((c) => [c.url, c]));
    return rows.map((r) => viewOf(r, lastOf.get(r.url)));
  }

  /** Every version of `rawUrl`'s setting (without: of every repository's), newest first. */
  async history(rawUrl?: string): Promise<ChartRepositoryVerificationChange[]> {
    const where = rawUrl === undefined ? {} : { url: chartRepositoryKey(rawUrl) };
    const rows = await this.db.prisma.chartRepositoryVerificationChange.findMany({
      where,
      orderBy: { createdAt: 'desc' },
    });
    return rows.map((r) => ({
      url: r.url,
      verify: r.verify as ChartVerifySetting,
      gpgKeys: r.gpgKeys,
      fingerprints: r.fingerprints,
      setBy: r.actor,
      setAt: r.createdAt.toISOString(),
    }));
  }

  /** The appsets with a target rendering a chart of `url` (its one source or one of its sources). */
  private async requestExpansions(url: string): Promise<void> {
    const both = [url, `${url}/`];
    const rows = await this.db.prisma.$queryRaw<{ appSetId: string }[]>`
      SELECT DISTINCT t."appSetId" FROM "Target" t
      WHERE t."deletionState" IS NULL AND (t."repoUrl" = ANY(${both})
        OR EXISTS (SELECT 1 FROM jsonb_array_elements(COALESCE(t."sources", '[]'::jsonb)) s
                   WHERE s->>'repoUrl' = ANY(${both})))`;
    for (const r of rows) await this.expansions.requestExpand(r.appSetId);
  }
}

/** A setting's identity: any change to `verify` or the keyring is a new question for every chart. */
export function chartSettingDigest(verify: ChartVerifySetting, gpgKeys: string): string {
  if (verify === 'none') return '';
  return createHash('sha256')
    .update(JSON.stringify([verify, gpgKeys]))
    .digest('hex');
}

/** A stored setting as the API shows it, with who set it when (its newest change). */
function viewOf(row: SettingRow, last: SettingChangeRow | undefined): ChartRepositoryVerificationView {
  return {
    url: row.url,
    verify: row.verify as ChartVerifySetting,
    gpgKeys: row.gpgKeys,
    fingerprints: row.fingerprints,
    setBy: last?.actor ?? null,
    setAt: last?.createdAt.toISOString() ?? null,
  };
}
