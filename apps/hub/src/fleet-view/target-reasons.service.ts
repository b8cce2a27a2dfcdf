import { Inject, Injectable } from '@nestjs/common';
import {
  policyDenialSchema,
  targetReason,
  type BreakGlass as BreakGlassOverride,
  type SyncOutcome,
  type TargetFacts,
  type TargetReason,
} from '@flotilla/contract';
import { targetWindowStatus, type NamedSyncWindow } from '@flotilla/windows';
import { BreakGlassService } from '../break-glass/break-glass.service.js';
import { storedErrorText } from '../common/json.js';
import { HUB_CONFIG, type HubConfig } from '../config/hub-config.js';
import { Database } from '../db/database.js';
import type { Prisma } from '../generated/prisma/client.js';
import { WindowsService } from '../release/windows/windows.service.js';
import { COMPARISON_SUMMARY, syncStatusOf } from '../desired-state/sync-status.js';

/** What a target row must carry for its reason: pass this as (part of) the query's `include`. */
export const REASON_INCLUDE = {
  cluster: { select: { name: true, lastSeenAt: true } },
  appSet: { select: { name: true, project: true, status: true, error: true, pendingExpansion: true } },
  pin: true,
  comparison: COMPARISON_SUMMARY,
} as const satisfies Prisma.TargetInclude;

export type ReasonTarget = Prisma.TargetGetPayload<{ include: typeof REASON_INCLUDE }>;

/** Expansion failures that are the project's refusal, not a broken generator or source. */
const PROJECT_ERROR_CODES = new Set([
  'repo-not-permitted',
  'destination-not-permitted',
  'kind-not-permitted',
  'project-not-found',
  'invalid-project',
]);

/**
 * The expansion refused a commit its repository's verification mode does not allow, or a chart
 * package its chart repository's provenance setting does not (sources/verification).
 */
const SOURCE_UNVERIFIED = new Set(['source-unverified', 'chart-unverified']);

const ACTIVE_ROLLOUT = ['Progressing', 'Paused', 'Halted'];

/**
 * The one current reason of many targets at once (a page of the fleet view, `flotilla targets`):
 * the facts `targetReason` weighs, gathered with one query per kind of fact, never one per target.
 */
@Injectable()
export class TargetReasons {
  constructor(
    private readonly db: Database,
    private readonly windows: WindowsService,
    private readonly breakGlass: BreakGlassService,
    @Inject(HUB_CONFIG) private readonly config: HubConfig,
  ) {}

  async of(targets: readonly ReasonTarget[], now = new Date()): Promise<Map<string, TargetReason | null>> {
    const out = new Map<string, TargetReason | null>();
    if (targets.length === 0) return out;
    const ids = targets.map((t) => t.id);
    const [lastRuns, named, overrides, rollouts] = await Promise.all([
      this.lastRuns(ids),
      this.windows.named(),
      this.breakGlass.activeFor(
        targets.map((t) => ({ name: t.name, clusterName: t.cluster.name, appSetName: t.appSet.name })),
        now,
      ),
      this.db.prisma.rollout.findMany({
        where: {
          appSetId: { in: [...new Set(targets.map((t) => t.appSetId))] },
          status: { in: ACTIVE_ROLLOUT },
        },
        orderBy: { createdAt: 'desc' },
        select: { appSetId: true, status: true, message: true },
      }),
    ]);
    const lastRun = new Map(lastRuns.map((r) => [r.targetId, r]));
    const rolloutOf = new Map<string, { status: string; message: string }>();
    for (const r of rollouts) if (!rolloutOf.has(r.appSetId)) rolloutOf.set(r.appSetId, r);
    const around: ReasonSurroundings = {
      now,
      offlineBefore: now.getTime() - this.config.rollouts.offlineAfterSeconds * 1000,
      windows: named,
      overrides,
      rolloutOf,
      lastRun,
    };
    for (const t of targets) out.set(t.id, targetReason(factsOf(t, around)));
    return out;
  }

  /**
   * The latest run of each target (a dry run changed nothing: not counted), one index probe per target (SyncRun's targetId, startedAt index).
   * Not Prisma's `distinct`: without its native preview feature it reads every run of every target
   * and keeps the first in memory, which over a long history is the whole table.
   */
  private lastRuns(ids: string[]): Promise<{ targetId: string; outcome: string; message: string }[]> {
    return this.db.prisma.$queryRaw`
      SELECT t."id" AS "targetId", r."outcome", r."message"
        FROM unnest(${ids}::text[]) AS t("id")
       CROSS JOIN LATERAL (
             SELECT "outcome", "message"
               FROM "SyncRun"
              WHERE "targetId" = t."id" AND NOT "dryRun"
              ORDER BY "startedAt" DESC, "createdAt" DESC
              LIMIT 1) r`;
  }
}

/** What every target's facts are read against: the clock, sync windows, overrides, rollouts, last runs. */
interface ReasonSurroundings {
  now: Date;
  /** A cluster not seen since this time (ms) is offline. */
  offlineBefore: number;
  windows: NamedSyncWindow[];
  overrides: Map<string, BreakGlassOverride[]>;
  /** Each appset's latest active rollout. */
  rolloutOf: Map<string, { status: string; message: string }>;
  lastRun: Map<string, { outcome: string; message: string }>;
}

/** The facts `targetReason` weighs for one target. */
function factsOf(t: ReasonTarget, around: ReasonSurroundings): TargetFacts {
  const policy = (t.syncPolicy ?? {}) as { automated?: unknown };
  const facts: TargetFacts = {
    automated: policy.automated !== false,
    syncStatus: syncStatusOf(t),
    health: t.health as TargetFacts['health'],
  };
  const seen = t.cluster.lastSeenAt;
  if (!seen || seen.getTime() < around.offlineBefore)
    facts.agentOffline = { lastSeenAt: seen?.toISOString() ?? null };
  if (t.deletionState === 'Pending' || t.deletionState === 'Failed')
    facts.deletion = {
      state: t.deletionState,
      requestedBy: t.deletionBy ?? '',
      reason: t.deletionReason ?? '',
      message: t.deletionMessage,
    };
  addAppSetFacts(facts, t.appSet);
  // Only while Git still wants the bundle denied: a newer one is judged again before release.
  const denial = policyDenialSchema.safeParse(t.policyDenial);
  if (denial.success && denial.data.digest === t.bundleDigest) facts.policyDenied = denial.data;
  if (t.pin) facts.pin = { revision: t.pin.revision, actor: t.pin.actor, reason: t.pin.reason };
  const bypass = (around.overrides.get(t.name) ?? []).some((b) => b.allowSyncOutsideWindows);
  if (!bypass) addWindowFact(facts, t, around);
  const rollout = around.rolloutOf.get(t.appSetId);
  if (rollout && t.releasedRevision !== t.desiredRevision)
    facts.rolloutStep = { message: rollout.message || `rollout ${rollout.status}` };
  const run = around.lastRun.get(t.id);
  if (run) facts.lastSync = { outcome: run.outcome as SyncOutcome, message: run.message };
  return facts;
}

/** The appset's failed expansion (the project's refusal, an unverified source or a generator's error) or held one. */
function addAppSetFacts(facts: TargetFacts, appSet: ReasonTarget['appSet']): void {
  if (appSet.status === 'Error') {
    const code = (appSet.error as { code?: unknown } | null)?.code;
    const message = storedErrorText(appSet.error);
    if (typeof code === 'string' && PROJECT_ERROR_CODES.has(code)) facts.projectDenied = { message };
    else if (typeof code === 'string' && SOURCE_UNVERIFIED.has(code)) facts.sourceUnverified = { message };
    else facts.generatorError = { message };
  }
  if (appSet.status === 'Held') {
    const pending = appSet.pendingExpansion as { message?: unknown } | null;
    facts.deletionGuardHeld = {
      message:
        typeof pending?.message === 'string'
          ? pending.message
          : 'the deletion guard holds the latest expansion until a person confirms it',
    };
  }
}

/** A closed sync window, unless a break-glass override lets syncs through (the caller checks). */
function addWindowFact(facts: TargetFacts, t: ReasonTarget, around: ReasonSurroundings): void {
  const status = targetWindowStatus(
    around.windows,
    { application: t.name, namespace: t.namespace, cluster: t.cluster.name, project: t.appSet.project },
    around.now,
  );
  // A manual target waits for a person, and a person's sync follows the manual rule.
  const closed = facts.automated ? !status.canSync : !status.canSyncManually;
  if (closed)
    facts.windowClosed = {
      window: status.active.join(', ') || '(no allow window is active)',
      nextOpen: status.nextOpen?.toISOString() ?? null,
    };
}
