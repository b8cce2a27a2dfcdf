import { Inject, Injectable } from '@nestjs/common';
import { targetReason, type SyncOutcome, type TargetFacts, type TargetReason } from '@flotilla/contract';
import { targetWindowStatus } from '@flotilla/windows';
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
    const offlineBefore = now.getTime() - this.config.rollouts.offlineAfterSeconds * 1000;

    for (const t of targets) {
      const policy = (t.syncPolicy ?? {}) as { automated?: unknown };
      const facts: TargetFacts = {
        automated: policy.automated !== false,
        syncStatus: syncStatusOf(t),
        health: t.health as TargetFacts['health'],
      };
      const seen = t.cluster.lastSeenAt;
      if (!seen || seen.getTime() < offlineBefore)
        facts.agentOffline = { lastSeenAt: seen?.toISOString() ?? null };
      if (t.deletionState === 'Pending' || t.deletionState === 'Failed')
        facts.deletion = {
          state: t.deletionState,
          requestedBy: t.deletionBy ?? '',
          reason: t.deletionReason ?? '',
          message: t.deletionMessage,
        };
      if (t.appSet.status === 'Error') {
        const code = (t.appSet.error as { code?: unknown } | null)?.code;
        const message = storedErrorText(t.appSet.error);
        if (typeof code === 'string' && PROJECT_ERROR_CODES.has(code)) facts.projectDenied = { message };
        else facts.generatorError = { message };
      }
      if (t.appSet.status === 'Held') {
        const pending = t.appSet.pendingExpansion as { message?: unknown } | null;
        facts.deletionGuardHeld = {
          message:
            typeof pending?.message === 'string'
              ? pending.message
              : 'the deletion guard holds the latest expansion until a person confirms it',
        };
      }
      if (t.pin) facts.pin = { revision: t.pin.revision, actor: t.pin.actor, reason: t.pin.reason };
      const bypass = (overrides.get(t.name) ?? []).some((b) => b.allowSyncOutsideWindows);
      if (!bypass) {
        const status = targetWindowStatus(
          named,
          { application: t.name, namespace: t.namespace, cluster: t.cluster.name, project: t.appSet.project },
          now,
        );
        // A manual target waits for a person, and a person's sync follows the manual rule.
        const closed = facts.automated ? !status.canSync : !status.canSyncManually;
        if (closed)
          facts.windowClosed = {
            window: status.active.join(', ') || '(no allow window is active)',
            nextOpen: status.nextOpen?.toISOString() ?? null,
          };
      }
      const rollout = rolloutOf.get(t.appSetId);
      if (rollout && t.releasedRevision !== t.desiredRevision)
        facts.rolloutStep = { message: rollout.message || `rollout ${rollout.status}` };
      const run = lastRun.get(t.id);
      if (run) facts.lastSync = { outcome: run.outcome as SyncOutcome, message: run.message };
      out.set(t.id, targetReason(facts));
    }
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
