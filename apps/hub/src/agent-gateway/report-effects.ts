// What each report does to its target, in memory: the sync runs, status changes and audit events a batch will write.
import type { AuditActor, ComparisonReport, DriftReport, HealthReport, SyncReport } from '@flotilla/contract';
import { toJson } from '../common/json.js';
import type { AuditEntry } from '../audit/audit.service.js';
import type { Prisma } from '../generated/prisma/client.js';

/** What a batch does to one target's status columns; undefined = leave the column as it is. */
export interface StatusChange {
  health?: string;
  healthMessage?: string;
  healthObservedAt?: string;
  lastSyncedRevision?: string;
  lastSyncedDigest?: string;
  lastSyncedAt?: string;
  lastReportAt?: string;
}

/**
 * A target as the batch sees it: its health and last sync move as the batch's reports are applied,
 * and only forward in the agent's time — a report observed before the one shown changes nothing.
 */
export interface TargetState {
  id: string;
  name: string;
  health: string;
  healthObservedAt: Date | null;
  lastSyncedAt: Date | null;
  /** The revision it last synced: what a change of its health is about. */
  lastSyncedRevision: string | null;
  appSetId: string;
  clusterId: string;
  /** Copied onto the target's sync runs: history keeps them after the target, cluster or appset goes. */
  clusterName: string;
  appSetName: string;
}

/** Everything a batch writes, collected in report order and written set-based at the end. */
export interface BatchEffects {
  syncRuns: Prisma.SyncRunCreateManyInput[];
  status: Map<string, StatusChange>;
  audit: AuditEntry[];
  /** Per target, the latest comparison the group carries (observed last; equal times: arrived last). */
  comparisons: Map<string, ComparisonReport>;
  /** Appsets to expand once the transaction commits: a target deleted here that Git may still want. */
  expand: { appSetId: string; deletionId: string }[];
  /** Targets an automatic rollback pinned, away from revision `from`: a revert may be opened for each. */
  reverts: { targetId: string; from: string }[];
}

export function noEffects(): BatchEffects {
  return { syncRuns: [], status: new Map(), audit: [], comparisons: new Map(), expand: [], reverts: [] };
}

export function applySync(
  effects: BatchEffects,
  clusterId: string,
  actor: AuditActor,
  target: TargetState,
  r: SyncReport,
): void {
  effects.syncRuns.push({
    targetId: target.id,
    clusterId,
    appSetId: target.appSetId,
    targetName: target.name,
    clusterName: target.clusterName,
    appSetName: target.appSetName,
    revision: r.revision,
    bundleDigest: r.bundleDigest,
    trigger: r.trigger,
    outcome: r.outcome,
    message: r.message,
    startedAt: new Date(r.startedAt),
    finishedAt: new Date(r.finishedAt),
    resources: toJson(r.resources),
    dryRun: r.dryRun === true,
    agentReportId: r.id,
    operationId: r.operationId ?? null,
  });
  const change = changeOf(effects, target.id);
  touchReport(change, r.at);
  if (r.dryRun) {
    // It changed nothing: no last sync moves, and the audit action is its own, so nothing that
    // follows real syncs (notifications, rollouts, rollback) takes it for one.
    effects.audit.push({
      actor,
      action: 'sync.dry-run',
      scope: `target:${target.name}`,
      details: {
        outcome: r.outcome,
        revision: r.revision,
        bundleDigest: r.bundleDigest,
        message: r.message,
        reportId: r.id,
      },
    });
    return;
  }
  // The run is history whatever its age; the target's last sync only moves to a later one.
  const finished = new Date(r.finishedAt);
  if (r.outcome === 'Succeeded' && !isBefore(finished, target.lastSyncedAt)) {
    change.lastSyncedRevision = r.revision;
    change.lastSyncedDigest = r.bundleDigest;
    change.lastSyncedAt = finished.toISOString();
    target.lastSyncedAt = finished;
    target.lastSyncedRevision = r.revision;
  }
  effects.audit.push({
    actor,
    action: `sync.${r.outcome.toLowerCase()}`,
    scope: `target:${target.name}`,
    details: {
      revision: r.revision,
      bundleDigest: r.bundleDigest,
      trigger: r.trigger,
      message: r.message,
      reportId: r.id,
    },
  });
}

export function applyHealth(
  effects: BatchEffects,
  actor: AuditActor,
  target: TargetState,
  r: HealthReport,
): void {
  const change = changeOf(effects, target.id);
  touchReport(change, r.at);
  const observed = new Date(r.at);
  // Observed before the health shown (a retry delivered late, an overlapping batch that committed
  // after a newer one): kept as a processed report, but it neither changes the status nor is audited
  // as a change. Equal times: the later arrival wins, as reports of one agent come in order.
  if (isBefore(observed, target.healthObservedAt)) return;
  change.health = r.status;
  change.healthMessage = r.message;
  change.healthObservedAt = observed.toISOString();
  if (target.health !== r.status) {
    effects.audit.push({
      actor,
      action: 'health.changed',
      scope: `target:${target.name}`,
      // The revision it runs: a target degraded in a rollout is told with the revision that broke it.
      details: {
        from: target.health,
        to: r.status,
        message: r.message,
        revision: target.lastSyncedRevision,
        reportId: r.id,
      },
    });
  }
  // The next health report of this batch compares with this one, as if ingested one by one.
  target.health = r.status;
  target.healthObservedAt = observed;
}

export function applyDrift(
  effects: BatchEffects,
  actor: AuditActor,
  target: TargetState,
  r: DriftReport,
): void {
  touchReport(changeOf(effects, target.id), r.at);
  effects.audit.push({
    actor: r.manager ? `manager:${r.manager}` : actor,
    action: `drift.${r.state}`,
    scope: `target:${target.name}`,
    details: {
      resource: r.resource,
      paths: r.paths,
      breakGlassId: r.breakGlassId ?? null,
      reportId: r.id,
    },
  });
}

/** An observation, not an action: it moves the target's last report and its comparison, and is not audited. */
export function applyComparison(effects: BatchEffects, target: TargetState, r: ComparisonReport): void {
  touchReport(changeOf(effects, target.id), r.at);
  const held = effects.comparisons.get(target.id);
  if (!held || !isBefore(new Date(r.at), new Date(held.at))) effects.comparisons.set(target.id, r);
}

/** `2026-01-01T02:00:00+02:00` → `2026-01-01T00:00:00.000Z`; PostgreSQL reads it as that UTC wall time. */
export function utc(iso: string): string {
  return new Date(iso).toISOString();
}

function changeOf(effects: BatchEffects, targetId: string): StatusChange {
  let change = effects.status.get(targetId);
  if (!change) {
    change = {};
    effects.status.set(targetId, change);
  }
  return change;
}

/** Whether `t` is strictly before `shown` (nothing shown yet: never). */
function isBefore(t: Date, shown: Date | null): boolean {
  return shown !== null && t.getTime() < shown.getTime();
}

/** lastReportAt is the newest report's time, in whatever order the reports arrive. */
function touchReport(change: StatusChange, at: string): void {
  const iso = utc(at);
  if (change.lastReportAt === undefined || iso > change.lastReportAt) change.lastReportAt = iso;
}
