import type { RetentionConfig } from './retention-env.js';

const DAY_MS = 24 * 60 * 60 * 1000;

/** How far ahead of the hub's clock an agent's may run without a replay slipping through. */
const CLOCK_SKEW_MARGIN_DAYS = 1;

/** How far back from `now` a period of `days` reaches; null = 0 days, kept forever. */
function before(now: Date, days: number): Date | null {
  return days === 0 ? null : new Date(now.getTime() - days * DAY_MS);
}

/**
 * Reports the agent observed before this could be replays whose ids retention deleted (ids received
 * before `idsDeletedBefore` are gone; an agent's clock may run up to a day ahead): ingest drops them.
 * Null while no id was ever deleted.
 */
export function replayHorizon(idsDeletedBefore: Date | null): Date | null {
  return idsDeletedBefore === null
    ? null
    : new Date(idsDeletedBefore.getTime() + CLOCK_SKEW_MARGIN_DAYS * DAY_MS);
}

/** What retention may prune: rows older than each cutoff (null = that kind is kept forever). */
export interface RetentionCutoffs {
  /** Report payloads received before this are trimmed (the id stays). */
  reportPayloads: Date | null;
  /** Report ids received before this are deleted. */
  reportIds: Date | null;
  /** Sync runs the hub stored before this are deleted (whole months dropped, the rest in batches). */
  syncRuns: Date | null;
  /** Bundles stored (or last rendered) before this are deleted unless something still needs them. */
  bundles: Date | null;
  /** Signed-commit verdicts judged before this are deleted unless a target or strict mode needs them. */
  sourceVerifications: Date | null;
}

export function retentionCutoffs(config: RetentionConfig, now: Date): RetentionCutoffs {
  return {
    reportPayloads: before(now, config.reportPayloadDays),
    reportIds: before(now, config.reportIdDays),
    syncRuns: before(now, config.syncRunDays),
    bundles: before(now, config.bundleDays),
    sourceVerifications: before(now, config.sourceVerificationDays),
  };
}
