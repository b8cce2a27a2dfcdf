import type { RetentionConfig } from '../config/hub-config.js';

const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * Report ids are deleted a day after the replay horizon, so an agent whose clock runs up to a day
 * ahead of the hub's still cannot slip a replay between the two.
 */
const CLOCK_SKEW_MARGIN_DAYS = 1;

/** How far back from `now` a period of `days` reaches; null = 0 days, kept forever. */
function before(now: Date, days: number): Date | null {
  return days === 0 ? null : new Date(now.getTime() - days * DAY_MS);
}

/**
 * Reports the agent observed before this are too old to tell from a replay whose id retention has
 * deleted: ingest drops them. Null when ids are kept forever.
 */
export function replayHorizon(reportIdDays: number, now: Date): Date | null {
  return before(now, reportIdDays);
}

/** What retention may prune: rows older than each cutoff (null = that kind is kept forever). */
export interface RetentionCutoffs {
  /** Report payloads received before this are trimmed (the id stays). */
  reportPayloads: Date | null;
  /** Report ids received before this are deleted. */
  reportIds: Date | null;
  /** Sync runs started before this are deleted. */
  syncRuns: Date | null;
  /** Bundles stored (or last rendered) before this are deleted unless something still needs them. */
  bundles: Date | null;
}

export function retentionCutoffs(config: RetentionConfig, now: Date): RetentionCutoffs {
  return {
    reportPayloads: before(now, config.reportPayloadDays),
    reportIds: config.reportIdDays === 0 ? null : before(now, config.reportIdDays + CLOCK_SKEW_MARGIN_DAYS),
    syncRuns: before(now, config.syncRunDays),
    bundles: before(now, config.bundleDays),
  };
}
