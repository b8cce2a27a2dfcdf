import type { SyncStatus } from '@flotilla/contract';
import { Prisma } from '../generated/prisma/client.js';

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
 * What sync status is decided from. `syncFactsOf` reads them off one target row; `SYNC_FACTS_SQL`
 * has PostgreSQL compute the same for every target at once (the fleet view), so that ten thousand
 * targets cross the wire as four booleans each instead of their revisions, digests and policies.
 */
export interface SyncFacts {
  /** A successful sync was reported at least once. */
  synced: boolean;
  /** The last successful sync was of the desired revision and bundle. */
  atDesired: boolean;
  automated: boolean;
  /** What the agent's comparison says of what Git wants now (null: none, or not current). */
  currentInSync: boolean | null;
}

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
  return syncStatusFrom(syncFactsOf(t));
}

export function syncStatusFrom(f: SyncFacts): SyncStatus {
  const fromSync: SyncStatus = !f.synced ? 'Unknown' : f.atDesired ? 'Synced' : 'OutOfSync';
  if (f.automated || f.currentInSync === null) return fromSync;
  return f.currentInSync ? 'Synced' : 'OutOfSync';
}

export function syncFactsOf(t: SyncFields): SyncFacts {
  const c = t.comparison;
  return {
    synced: Boolean(t.lastSyncedAt),
    atDesired: t.lastSyncedRevision === t.desiredRevision && t.lastSyncedDigest === t.bundleDigest,
    automated: automatedOf(t.syncPolicy),
    currentInSync: c && comparisonIsCurrent(t, c) ? c.inSync : null,
  };
}

/**
 * `syncFactsOf` in SQL, as the columns `synced`, `atDesired`, `automated` and `currentInSync` of a
 * query over `"Target" t LEFT JOIN "TargetComparison" c ON c."targetId" = t."id"`. It must say
 * what `syncFactsOf` says: sync-status-sql.spec.ts checks the two against each other.
 */
export const SYNC_FACTS_SQL = Prisma.sql`
  t."lastSyncedAt" IS NOT NULL AS "synced",
  COALESCE(t."lastSyncedRevision" = t."desiredRevision", false)
    AND t."lastSyncedDigest" IS NOT DISTINCT FROM t."bundleDigest" AS "atDesired",
  (t."syncPolicy" -> 'automated') IS DISTINCT FROM 'false'::jsonb AS "automated",
  CASE WHEN c."revision" = t."desiredRevision"
             AND c."bundleDigest" IS NOT DISTINCT FROM t."bundleDigest"
             AND NOT (t."lastSyncedAt" IS NOT NULL AND c."observedAt" < t."lastSyncedAt")
       THEN c."inSync" END AS "currentInSync"`;

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
