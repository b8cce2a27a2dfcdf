import type { SyncStatus } from '@flotilla/contract';

interface SyncFields {
  desiredRevision: string;
  bundleDigest: string | null;
  lastSyncedRevision: string | null;
  lastSyncedDigest: string | null;
  lastSyncedAt: Date | null;
}

/**
 * Synced when the last successful sync report is at the desired revision and bundle; OutOfSync when
 * the agent has synced something else; Unknown before any successful sync was reported.
 * Computed on read, so a new desired revision turns a target OutOfSync at once.
 */
export function syncStatusOf(t: SyncFields): SyncStatus {
  if (!t.lastSyncedAt) return 'Unknown';
  return t.lastSyncedRevision === t.desiredRevision && t.lastSyncedDigest === t.bundleDigest
    ? 'Synced'
    : 'OutOfSync';
}
