import { systemActor } from '@flotilla/contract';
import { ManifestError } from '@flotilla/manifests';
import {
  verifyChartProvenance,
  type ChartPackageGate,
  type ChartVerifyMode,
  type DownloadedChart,
  type HelmRunOptions,
} from '@flotilla/manifests/node';
import { Injectable, Logger } from '@nestjs/common';
import { AuditLog } from '../../audit/audit.service.js';
import { Database } from '../../db/database.js';
import type { ChartRepositoryVerification as Setting } from '../../generated/prisma/client.js';
import { storedChartRepositoryUrl } from './chart-verification-settings.service.js';

/** A chart package's verdict: true signed by an allowed key, false refused, null not checked. */
interface ChartVerdict {
  verified: boolean | null;
  signer: string;
  message: string;
}

/** Verdicts kept in memory per replica; past this, the oldest are dropped (the table still has them). */
const MEMORY_LIMIT = 10_000;

/**
 * Helm provenance at render time: every chart package downloaded from a repository whose setting is
 * not `none` is judged — by Helm itself, `verifyChartProvenance` — before it is unpacked. Each
 * (repository, chart, version, package digest, setting digest) is judged once and stored in
 * `ChartVerification`, so 1,000 targets of one chart verify it once and a changed setting is a new
 * question. A refusal is audited once (`chart.unverified`) and fails the render with
 * `chart-unverified`, which the expansion turns into its error: nothing is released.
 */
@Injectable()
export class ChartProvenance {
  private readonly logger = new Logger(ChartProvenance.name);
  private readonly recent = new Map<string, Promise<ChartVerdict>>();

  constructor(
    private readonly db: Database,
    private readonly audit: AuditLog,
  ) {}

  /** The digest of `repoUrl`'s setting ('' for none): part of a chart render's identity. */
  async settingDigest(repoUrl: string): Promise<string> {
    return (await this.settingOf(repoUrl))?.digest ?? '';
  }

  /**
   * The gate a render hands to the chart client. `record: false` (a preview) reads a stored verdict
   * or asks Helm, and writes nothing: no verdict row, no audit event, nothing remembered.
   */
  gate(helm: HelmRunOptions | null, options: { record: boolean }): ChartPackageGate {
    return async (chart) => {
      const setting = await this.settingOf(chart.repoURL);
      if (!setting || setting.verify === 'none') return;
      const verdict = await this.verdict(setting, chart, helm, options.record);
      if (verdict.verified === false)
        throw new ManifestError(
          'chart-unverified',
          `${setting.url} ${chart.chart}@${chart.version}`,
          verdict.message,
        );
    };
  }

  private settingOf(repoUrl: string): Promise<Setting | null> {
    return this.db.prisma.chartRepositoryVerification.findUnique({
      where: { url: storedChartRepositoryUrl(repoUrl) },
    });
  }

  private verdict(
    setting: Setting,
    chart: DownloadedChart,
    helm: HelmRunOptions | null,
    record: boolean,
  ): Promise<ChartVerdict> {
    const where = {
      repoUrl: setting.url,
      chart: chart.chart,
      version: chart.version,
      packageDigest: chart.digest,
      digest: setting.digest,
    };
    const key = Object.values(where).join('\0');
    const known = this.recent.get(key);
    if (known) return known;
    const stored = this.db.prisma.chartVerification.findUnique({
      where: { repoUrl_chart_version_packageDigest_digest: where },
    });
    if (!record) return stored.then((s) => s ?? this.judge(setting, chart, helm));
    const judged = stored.then(async (s) => {
      if (s) return s;
      const verdict = await this.judge(setting, chart, helm);
      await this.store(setting, where, verdict);
      return verdict;
    });
    // Helm could not run (a timeout, no binary): refused now, neither stored nor remembered.
    judged.catch(() => this.recent.delete(key));
    this.recent.set(key, judged);
    if (this.recent.size > MEMORY_LIMIT) this.recent.delete(this.recent.keys().next().value!);
    return judged;
  }

  private async judge(
    setting: Setting,
    chart: DownloadedChart,
    helm: HelmRunOptions | null,
  ): Promise<ChartVerdict> {
    const about = `chart ${chart.chart} ${chart.version} of ${setting.url}`;
    if (!helm)
      throw new ManifestError(
        'chart-unverified',
        about,
        'no helm binary to verify its provenance with (HELM_BINARY)',
      );
    const verdict = await verifyChartProvenance({
      mode: setting.verify as ChartVerifyMode,
      packageName: chart.packageName,
      packageBytes: chart.bytes,
      provenance: await chart.provenance(),
      keyring: setting.gpgKeys,
      helm,
    });
    if (verdict.verified === true)
      return { verified: true, signer: verdict.signer, message: `${about}: signed by ${verdict.signer}` };
    return {
      verified: verdict.verified,
      signer: '',
      message:
        verdict.verified === false
          ? `chart unverified (verify: ${setting.verify}) in ${setting.url}: ${about}: ${verdict.reason}`
          : `${about}: ${verdict.reason}`,
    };
  }

  private async store(
    setting: Setting,
    where: { repoUrl: string; chart: string; version: string; packageDigest: string; digest: string },
    verdict: ChartVerdict,
  ): Promise<void> {
    const { count } = await this.db.prisma.chartVerification.createMany({
      data: [{ ...where, verify: setting.verify, ...verdict }],
      skipDuplicates: true,
    });
    // Another replica judged it at the same moment: it audited the refusal.
    if (count !== 1 || verdict.verified !== false) return;
    this.logger.warn(verdict.message);
    await this.audit.record({
      actor: systemActor('source-verification'),
      action: 'chart.unverified',
      scope: `chart-repository:${setting.url}`,
      details: {
        repository: setting.url,
        chart: where.chart,
        version: where.version,
        packageDigest: where.packageDigest,
        verify: setting.verify,
        fingerprints: setting.fingerprints,
        message: verdict.message,
      },
    });
  }
}
