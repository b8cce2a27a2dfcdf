import type { SyncStatus } from '@flotilla/contract';
import type { Prisma } from '../generated/prisma/client.js';

/** The part of the agent's latest comparison that sync status reads (select it with COMPARISON_SUMMARY). */
interface ComparisonSummary {
  revision: string;
  bundleDigest: string;
  inSync: boolean;
  observedAt: Date;
}

interface SyncFields {
  desiredRevision: string;
  bundleDigest: string | null;
  lastSyncedRevision: string | null;
  lastSyncedDigest: string | null;
  lastSyncedAt: Date | null;
  syncPolicy: unknown;
  comparison: ComparisonSummary | null;
}

/** Pass as `comparison` in a target query's select or include: what `syncStatusOf` needs of it. */
export const COMPARISON_SUMMARY = {
  select: { revision: true, bundleDigest: true, inSync: true, observedAt: true },
} as const;

/** Spread into a target query's `select`: every field `syncStatusOf` reads. */
export const SYNC_STATUS_SELECT = {
  desiredRevision: true,
  bundleDigest: true,
  lastSyncedRevision: true,
  lastSyncedDigest: true,
  lastSyncedAt: true,
  syncPolicy: true,
  comparison: COMPARISON_SUMMARY,
} as const satisfies Prisma.TargetSelect;

/**
 * For a target with automated sync: Synced when the last successful sync report is at the desired
 * revision and bundle; OutOfSync when the agent has synced something else; Unknown before any
 * successful sync was reported. Computed on read, so a new desired revision turns a target
 * OutOfSync at once.
 *
 * With automated sync off nothing syncs on its own, so "never synced" would stay Unknown forever:
 * the agent's comparison of the desired revision and bundle with the cluster answers instead
 * (Argo CD's sync status), unless a sync reported after it says more.
 */
export function syncStatusOf(t: SyncFields): SyncStatus {
  const fromSync: SyncStatus = !t.lastSyncedAt
    ? 'Unknown'
    : t.lastSyncedRevision === t.desiredRevision && t.lastSyncedDigest === t.bundleDigest
      ? 'Synced'
      : 'OutOfSync';
  const c = t.comparison;
  if (automatedOf(t.syncPolicy) || !c || !comparisonIsCurrent(t, c)) return fromSync;
  return c.inSync ? 'Synced' : 'OutOfSync';
}

/**
 * Whether the agent's comparison `c` speaks of what Git wants now: of the desired revision and
 * bundle, and not older than the last successful sync (which has changed the cluster since).
 */
export function comparisonIsCurrent(
  t: Pick<SyncFields, 'desiredRevision' | 'bundleDigest' | 'lastSyncedAt'>,
  c: Pick<ComparisonSummary, 'revision' | 'bundleDigest' | 'observedAt'>,
): boolean {
  return (
    c.revision === t.desiredRevision &&
    c.bundleDigest === t.bundleDigest &&
    !(t.lastSyncedAt && c.observedAt.getTime() < t.lastSyncedAt.getTime())
  );
}

/** Automated unless the policy says `automated: false` (the hub stores it parsed, defaults filled). */
function automatedOf(policy: unknown): boolean {
  return (policy as { automated?: unknown } | null)?.automated !== false;
}
