import { csvLine } from './audit-event.js';
import type { SyncRunView } from './target-views.js';

/** `GET /api/v1/sync-runs?format=csv`: the run's own fields, one run a row (resources stay in NDJSON). */
export const SYNC_RUN_CSV_COLUMNS = [
  'id',
  'startedAt',
  'finishedAt',
  'target',
  'cluster',
  'appSet',
  'trigger',
  'outcome',
  'revision',
  'bundleDigest',
  'message',
  'reportId',
] as const satisfies readonly (keyof SyncRunView)[];

export function syncRunCsvHeader(): string {
  return csvLine(SYNC_RUN_CSV_COLUMNS);
}

export function syncRunCsvRow(r: SyncRunView): string {
  return csvLine(SYNC_RUN_CSV_COLUMNS.map((c) => r[c]));
}
