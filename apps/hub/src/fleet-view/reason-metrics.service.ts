import { Inject, Injectable } from '@nestjs/common';
import { Gauge } from 'prom-client';
import { TARGET_REASON_CODES, type TargetReasonCode } from '@flotilla/contract';
import { HUB_CONFIG, type HubConfig } from '../config/hub-config.js';
import { Database } from '../db/database.js';
import { REASON_INCLUDE, TargetReasons, type ReasonTarget } from './target-reasons.service.js';
import { HubMetrics } from '../metrics/hub-metrics.service.js';

/** Targets weighed per round: bounds the memory of one count and the size of each query. */
const PAGE_SIZE = 500;

/**
 * `flotilla_targets_by_reason{reason}`: how many targets have each current reason, the same reason
 * `GET /api/v1/targets` shows. Choosing a reason evaluates windows and reads each target's latest
 * run, so a count over the fleet is kept for METRICS_REASONS_MAX_AGE_SECONDS and shared by the
 * scrapes that arrive meanwhile, rather than redone at each one. Every code has a series, 0 included,
 * so that an alert on one code has something to compare before it first happens.
 */
@Injectable()
export class ReasonMetrics {
  private last: { at: number; counts: ReadonlyMap<TargetReasonCode, number> } | null = null;
  private counting: Promise<ReadonlyMap<TargetReasonCode, number>> | null = null;
  private readonly maxAgeMs: number;

  constructor(
    metrics: HubMetrics,
    private readonly db: Database,
    private readonly reasons: TargetReasons,
    @Inject(HUB_CONFIG) config: HubConfig,
  ) {
    this.maxAgeMs = config.metrics.reasonsMaxAgeSeconds * 1000;
    const counts = () => this.counts();
    new Gauge({
      name: 'flotilla_targets_by_reason',
      help: `Targets by their one current reason (not Synced and Healthy at the revision Git wants); counted at most every ${config.metrics.reasonsMaxAgeSeconds} s`,
      labelNames: ['reason'],
      registers: [metrics.registry],
      async collect() {
        const byCode = await counts();
        for (const code of TARGET_REASON_CODES) this.set({ reason: code }, byCode.get(code) ?? 0);
      },
    });
  }

  /** Targets per reason code over the whole fleet, counted at most `maxAge` ago; one count at a time. */
  counts(): Promise<ReadonlyMap<TargetReasonCode, number>> {
    if (this.last && Date.now() - this.last.at < this.maxAgeMs) return Promise.resolve(this.last.counts);
    this.counting ??= this.countAll()
      .then((counts) => {
        this.last = { at: Date.now(), counts };
        return counts;
      })
      .finally(() => {
        this.counting = null;
      });
    return this.counting;
  }

  private async countAll(): Promise<Map<TargetReasonCode, number>> {
    const now = new Date();
    const counts = new Map<TargetReasonCode, number>();
    let after: string | null = null;
    for (;;) {
      const page: ReasonTarget[] = await this.db.prisma.target.findMany({
        where: after === null ? {} : { id: { gt: after } },
        orderBy: { id: 'asc' },
        take: PAGE_SIZE,
        include: REASON_INCLUDE,
      });
      for (const reason of (await this.reasons.of(page, now)).values())
        if (reason) counts.set(reason.code, (counts.get(reason.code) ?? 0) + 1);
      if (page.length < PAGE_SIZE) return counts;
      after = page[page.length - 1]!.id;
    }
  }
}
