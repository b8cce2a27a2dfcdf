import { randomUUID } from 'node:crypto';
import {
  type Assignment,
  type DriftReport,
  type HealthReport,
  type SyncOperation,
  type SyncReport,
} from '@flotilla/contract';
import { type aggregateHealth } from '../health/target-health.js';
import { type ResourceId } from '../state/state-store.js';
import { refOfId } from '../sync/resource-ref.js';

/** An object found drifted by one comparison. */
export interface Drifted {
  key: string;
  id: ResourceId;
  paths: string[];
  manager?: string;
  /** First time this drift is seen (not yet reported). */
  isNew: boolean;
}

/** A sync run that applied nothing — blocked, refused, terminated before it started — with why. */
export function nothingAppliedReport(
  a: Assignment,
  trigger: SyncReport['trigger'],
  outcome: SyncReport['outcome'],
  message: string,
  at: string,
): SyncReport {
  return {
    type: 'sync',
    id: randomUUID(),
    targetId: a.targetId,
    at,
    revision: a.revision,
    bundleDigest: a.bundleDigest,
    trigger,
    outcome,
    startedAt: at,
    finishedAt: at,
    message,
    resources: [],
  };
}

/** A requested sync closed without applying anything: its report names the operation. */
export function closedOperationReport(
  a: Assignment,
  operation: SyncOperation,
  outcome: SyncReport['outcome'],
  message: string,
  at: string,
): SyncReport {
  return { ...nothingAppliedReport(a, 'manual', outcome, message, at), operationId: operation.id };
}

export function driftReport(
  targetId: string,
  state: DriftReport['state'],
  d: Drifted,
  at: string,
  breakGlassId?: string,
): DriftReport {
  const report: DriftReport = {
    type: 'drift',
    id: randomUUID(),
    targetId,
    at,
    state,
    resource: refOfId(d.id),
    paths: d.paths,
  };
  const manager = state === 'contested' ? (d.manager ?? 'unknown') : d.manager;
  if (manager) report.manager = manager;
  if (breakGlassId) report.breakGlassId = breakGlassId;
  return report;
}

export function healthReport(
  targetId: string,
  health: ReturnType<typeof aggregateHealth>,
  at: string,
): HealthReport {
  return {
    type: 'health',
    id: randomUUID(),
    targetId,
    at,
    status: health.status,
    message: health.message,
    resources: health.resources,
  };
}

/** How a requested sync's termination is told: who asked, and why. */
export function terminatedBy(t: NonNullable<SyncOperation['terminate']>): string {
  return `terminated by ${t.requestedBy}: ${t.reason}`;
}

/** The assignment as one requested run sees it: its prune and sync options over the appset's. */
export function runAssignment(a: Assignment, operation: SyncOperation): Assignment {
  if (!operation.prune && !operation.syncPolicy) return a;
  return {
    ...a,
    syncPolicy: { ...a.syncPolicy, ...operation.syncPolicy, ...(operation.prune && { prune: true }) },
  };
}
