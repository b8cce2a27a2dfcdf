// How long each kind of record is kept, and how the retention job that prunes them runs.
import { z } from 'zod';
import { HubConfigError } from './config-error.js';

export const retentionEnv = z.object({
  RETENTION_REPORT_PAYLOAD_DAYS: z.coerce
    .number()
    .int()
    .min(0)
    .default(7)
    .describe(
      "Days an agent report's payload is kept after it arrived; then only its id stays (for replays). 0 = keep payloads forever.",
    ),
  RETENTION_REPORT_ID_DAYS: z.coerce
    .number()
    .int()
    .min(0)
    .default(90)
    .describe(
      'Days an agent report id is kept to recognise replays. Once ids were deleted, a report observed before them is too old to tell from a replay and is dropped at ingest. 0 = keep ids forever.',
    ),
  RETENTION_SYNC_RUN_DAYS: z.coerce
    .number()
    .int()
    .min(0)
    .default(365)
    .describe(
      "Days sync history is kept, counted from when the hub stored each run (not the agent's clock). Whole months past it are dropped at once. 0 = keep it forever.",
    ),
  RETENTION_BUNDLE_DAYS: z.coerce
    .number()
    .int()
    .min(0)
    .default(30)
    .describe(
      'Days a rendered bundle no target needs is kept (desired, released, last synced, pinned and the last good one for rollback are always kept). 0 = keep every bundle.',
    ),
  RETENTION_SOURCE_VERIFICATION_DAYS: z.coerce
    .number()
    .int()
    .min(0)
    .default(90)
    .describe(
      "Days a signed-commit verdict (SourceVerification) is kept. Always kept, whatever their age: the verdicts of any revision a target wants, runs, last synced or is pinned to, and each repository's 20 newest verified commits (strict mode's baselines). 0 = keep every verdict.",
    ),
  RETENTION_INTERVAL_MINUTES: z.coerce
    .number()
    .int()
    .positive()
    .default(60)
    .describe('How often the retention job runs (once per interval across all hub replicas).'),
  RETENTION_BATCH_SIZE: z.coerce
    .number()
    .int()
    .min(1)
    .max(100_000)
    .default(1000)
    .describe('Rows one retention statement deletes or trims at most, so no statement holds locks for long.'),
});
type RetentionEnv = z.output<typeof retentionEnv>;

/** How long each kind of record is kept (days; 0 = forever) and how the retention job runs. */
export interface RetentionConfig {
  reportPayloadDays: number;
  reportIdDays: number;
  syncRunDays: number;
  bundleDays: number;
  sourceVerificationDays: number;
  intervalMinutes: number;
  batchSize: number;
}

/** A payload outliving its id would be a report the hub keeps but could no longer recognise. */
export function checkPayloadsKeptNoLongerThanIds(e: RetentionEnv): void {
  if (
    e.RETENTION_REPORT_ID_DAYS > 0 &&
    (e.RETENTION_REPORT_PAYLOAD_DAYS === 0 || e.RETENTION_REPORT_PAYLOAD_DAYS > e.RETENTION_REPORT_ID_DAYS)
  ) {
    throw new HubConfigError([
      {
        variable: 'RETENTION_REPORT_PAYLOAD_DAYS',
        message: `must be between 1 and RETENTION_REPORT_ID_DAYS (${e.RETENTION_REPORT_ID_DAYS}): a payload is kept no longer than its id; got ${e.RETENTION_REPORT_PAYLOAD_DAYS}`,
      },
    ]);
  }
}

export function retentionConfig(e: RetentionEnv): { retention: RetentionConfig } {
  return {
    retention: {
      reportPayloadDays: e.RETENTION_REPORT_PAYLOAD_DAYS,
      reportIdDays: e.RETENTION_REPORT_ID_DAYS,
      syncRunDays: e.RETENTION_SYNC_RUN_DAYS,
      bundleDays: e.RETENTION_BUNDLE_DAYS,
      sourceVerificationDays: e.RETENTION_SOURCE_VERIFICATION_DAYS,
      intervalMinutes: e.RETENTION_INTERVAL_MINUTES,
      batchSize: e.RETENTION_BATCH_SIZE,
    },
  };
}
