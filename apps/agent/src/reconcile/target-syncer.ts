import { type Assignment, type SyncOperation, type SyncReport, type SyncTrigger } from '@flotilla/contract';
import { type ResourceId } from '../state/state-store.js';
import { type SyncInput, type SyncResult } from '../sync/sync-input.js';
import { dryRunSync } from '../sync/dry-run-sync.js';
import { syncTarget } from '../sync/sync-target.js';
import { type GateDecision } from '../windows/sync-gate.js';
import { type HealPacing } from './heal-pacing.js';
import { type ReconcilerDeps } from './reconciler-deps.js';
import { type RetryTimer } from './retry-timer.js';
import { effectiveRetryPolicy, nextRetryAt, retryOutlook } from './sync-retry.js';
import { closedOperationReport, runAssignment, terminatedBy } from './target-reports.js';
import { type TargetView } from './target-view.js';

/** What a target's syncs share with its reconciler. */
export interface SyncerContext {
  /** Aborted when the agent stops: a sync waiting for health stops short (interrupted). */
  signal: AbortSignal;
  retry: RetryTimer;
  pacing: HealPacing;
  /** Automatic rollback's look after a full sync (see TargetReconciler.maybeRollBack). */
  rollBackIfDue: () => Promise<void>;
}

/**
 * Runs a target's syncs — automated, self-heal, rollback and the ones people ask for (dry runs
 * included) — and keeps the books after each: the report, the state on disk, the retry, health and
 * comparison reports.
 */
export class TargetSyncer {
  /** The requested sync running now, and how to terminate it when a person asks. */
  private running: { id: string; terminate: AbortController } | undefined;

  constructor(
    private readonly deps: ReconcilerDeps,
    private readonly view: TargetView,
    private readonly ctx: SyncerContext,
  ) {}

  /** Terminating is the one request that must reach a sync while it runs, not after it. */
  terminateIfAsked(operations: readonly SyncOperation[]): void {
    const running = this.running;
    const stop = running && operations.find((o) => o.id === running.id)?.terminate;
    if (stop && !running.terminate.signal.aborted) {
      const target = this.view.assignment.name;
      this.deps.log.info({ target, operation: running.id, ...stop }, 'terminating sync');
      running.terminate.abort(terminatedBy(stop));
    }
  }

  /**
   * Carries out an operation once: its id is saved as started before anything is applied. Refused
   * by the gate (a window without manualSync), it is reported Blocked; the report closes it on the hub.
   */
  async manualSync(operation: SyncOperation): Promise<void> {
    const a = this.view.assignment;
    this.view.state.startedOperations = [...this.view.state.startedOperations, operation.id].slice(-200);
    await this.deps.store.saveTargetState(a.targetId, this.view.state);
    this.deps.log.info(
      { target: a.name, operation: operation.id, requestedBy: operation.requestedBy },
      'sync requested',
    );
    if (operation.terminate) {
      // Terminated before it started: one report closes it, nothing applied.
      const message = `${terminatedBy(operation.terminate)} before it started; nothing applied`;
      const at = this.deps.now().toISOString();
      const report = closedOperationReport(a, operation, 'Terminated', message, at);
      await this.view.emit([{ ...report, ...(operation.dryRun && { dryRun: true }) }]);
      this.deps.log.info(
        { target: a.name, operation: operation.id },
        'requested sync terminated before it started',
      );
      return;
    }
    const decision = this.deps.gate(a, 'manual', this.deps.now());
    if (operation.dryRun) {
      await this.dryRun(operation, decision);
      return;
    }
    if (!decision.allowed) {
      await this.refuseOperation(operation, 'Blocked', decision.message);
      this.deps.log.info({ target: a.name, message: decision.message }, 'requested sync blocked');
      return;
    }
    // The revision asked for was the one assigned when asked; a newer one released since is not it.
    if (operation.revision !== undefined && operation.revision !== a.revision) {
      await this.refuseOperation(
        operation,
        'Failed',
        `revision ${operation.revision.slice(0, 12)} was asked for, but the target is now assigned ${a.revision.slice(0, 12)}; nothing applied`,
      );
      return;
    }
    let only: Set<string> | undefined;
    if (operation.resources) {
      await this.view.prepareDesired();
      const keys = operation.resources.map((r) => `${r.group}/${r.kind}/${r.namespace ?? ''}/${r.name}`);
      const missing = keys.filter((k) => !this.view.desiredByKey.has(k));
      if (missing.length > 0) {
        await this.refuseOperation(
          operation,
          'Failed',
          `not declared by revision ${a.revision.slice(0, 12)}: ${missing.join(', ')}; nothing applied`,
        );
        return;
      }
      only = new Set(keys);
    }
    await this.runSync('manual', only, decision.breakGlassId, undefined, operation);
  }

  /** Closes a requested sync that applies nothing: one report, with why. */
  private async refuseOperation(
    operation: SyncOperation,
    outcome: 'Blocked' | 'Failed',
    message: string,
  ): Promise<void> {
    const at = this.deps.now().toISOString();
    await this.view.emit([closedOperationReport(this.view.assignment, operation, outcome, message, at)]);
  }

  /**
   * A dry run changes nothing, so no window holds it: people preview before a window opens. What a
   * real sync would meet now is said in its message. Its report goes out without cluster Events
   * (those would announce syncs and prunes that did not happen) and moves no state of the target.
   */
  private async dryRun(operation: SyncOperation, decision: GateDecision): Promise<void> {
    const a = this.view.assignment;
    const report = await dryRunSync({
      kube: this.view.writer(a),
      // Per-run sync options shape what the server is asked; a dry run covers the whole target.
      assignment: runAssignment(a, operation),
      manifests: this.view.bundle.manifests,
      inventory: this.view.state.inventory,
      prune: operation.prune,
      now: this.deps.now,
    });
    report.operationId = operation.id;
    if (!decision.allowed) report.message += `; a sync now would be blocked: ${decision.message}`;
    await this.deps.emit([report]);
    this.deps.log.info({ target: a.name, outcome: report.outcome }, 'dry-run sync reported');
  }

  /**
   * One sync of the target's current assignment (`only`: a heal of these objects), then its books:
   * the report queued before the state that says it ran, health and comparison told, the next
   * retry or heal scheduled, automatic rollback considered.
   */
  async runSync(
    trigger: SyncTrigger,
    only: Set<string> | undefined,
    breakGlassId?: string,
    rolledBackFrom?: SyncReport['rolledBackFrom'],
    operation?: SyncOperation,
  ): Promise<SyncReport> {
    const a = this.view.assignment;
    const inventoryBefore = this.view.state.inventory;
    const result = await this.run(this.inputFor(a, trigger, only, breakGlassId, operation), operation);
    if (rolledBackFrom) result.report.rolledBackFrom = rolledBackFrom;
    if (operation) result.report.operationId = operation.id;
    if (operation?.resources)
      result.report.message = [
        `selective sync of ${operation.resources.length} object(s)`,
        result.report.message,
      ]
        .filter((m) => m)
        .join('; ');
    // The objects of the assignment this run applied: one that arrived meanwhile is synced next.
    this.view.setDesired(result.desired, a.bundleDigest);
    // What this run applied carries the tracking label now: the watch sees it from here on.
    this.view.watched(result.live.keys());
    for (const [key, live] of result.live) this.view.compare(key, live);
    this.view.state.inventory = result.inventory;
    // What this run pruned is gone, what it left in place (prune off) is still to be shown.
    await this.view.lookForLeftovers();
    if (result.interrupted) {
      // Stopping is not failing: keep tracking what was applied, and run this revision again
      // after the restart (no report of a failure, no back-off, no rollback bookkeeping). A
      // requested sync cut short this way is run again then too: nothing was reported for it.
      if (operation)
        this.view.state.startedOperations = this.view.state.startedOperations.filter(
          (id) => id !== operation.id,
        );
      await this.deps.store.saveTargetState(a.targetId, this.view.state);
      this.deps.log.info({ target: a.name, trigger }, 'sync interrupted: the agent is stopping');
      return result.report;
    }
    const attempts = await this.record(a, result.report, trigger, only, inventoryBefore);
    await this.tellAfterSync(a, result, only);
    this.scheduleAfterSync(a, result.report, only, attempts);
    if (!only && trigger !== 'rollback') await this.ctx.rollBackIfDue();
    return result.report;
  }

  private inputFor(
    a: Assignment,
    trigger: SyncTrigger,
    only: Set<string> | undefined,
    breakGlassId: string | undefined,
    operation: SyncOperation | undefined,
  ): SyncInput {
    const input: SyncInput = {
      kube: this.view.writer(a),
      // A requested prune and sync options apply to this run only.
      assignment: operation ? runAssignment(a, operation) : a,
      manifests: this.view.bundle.manifests,
      inventory: this.view.state.inventory,
      trigger,
      health: this.deps.health,
      now: this.deps.now,
      signal: this.ctx.signal,
      differ: this.deps.differ,
    };
    if (this.deps.syncWait) {
      input.waitTimeoutMs = this.deps.syncWait.timeoutMs;
      input.pollMs = this.deps.syncWait.pollMs;
    }
    if (only) input.only = only;
    if (breakGlassId) input.breakGlassId = breakGlassId;
    return input;
  }

  /** The sync itself; a requested one can be terminated while it runs (see terminateIfAsked). */
  private async run(input: SyncInput, operation: SyncOperation | undefined): Promise<SyncResult> {
    if (operation) {
      this.running = { id: operation.id, terminate: new AbortController() };
      input.terminate = this.running.terminate.signal;
      // Asked between reading the operation and this point: stop before the first object.
      const stop = this.view.assignment.operations.find((o) => o.id === operation.id)?.terminate;
      if (stop) this.running.terminate.abort(terminatedBy(stop));
    }
    try {
      return await syncTarget(input);
    } finally {
      this.running = undefined;
    }
  }

  /**
   * Queues the report, then saves the state that says the sync ran; returns the failed syncs of
   * this revision in a row (0 after a success).
   */
  private async record(
    a: Assignment,
    report: SyncReport,
    trigger: SyncTrigger,
    only: Set<string> | undefined,
    inventoryBefore: readonly ResourceId[],
  ): Promise<number> {
    const failedNow = report.outcome === 'Failed' || report.outcome === 'Partial';
    // Failed syncs of one revision in a row; a sync a person asked for starts the count again.
    const attempts = !failedNow
      ? 0
      : trigger !== 'manual' && this.view.attemptedHere()
        ? Math.max(1, this.view.state.lastSync?.attempts ?? 0) + 1
        : 1;
    if (failedNow && !only && a.syncPolicy.automated)
      report.message = [
        report.message,
        retryOutlook(effectiveRetryPolicy(a.syncPolicy), attempts, new Date(report.at)),
      ]
        .filter((m) => m)
        .join('; ');
    // The report goes to the on-disk queue before the state that says the sync happened: a crash
    // in between replays the sync (a new report, harmless), never loses the report.
    await this.view.emit([report], inventoryBefore);
    if (!only)
      this.view.state.lastSync = {
        digest: a.bundleDigest,
        revision: a.revision,
        outcome: report.outcome,
        at: report.at,
        attempts,
      };
    this.view.state.pendingIntent = null;
    const writesAs = this.deps.writeAs?.(a);
    if (writesAs !== undefined) this.view.state.writesAs = writesAs;
    else delete this.view.state.writesAs;
    await this.deps.store.saveTargetState(a.targetId, this.view.state);
    if (!only) await this.deps.rollback?.synced(a, report);
    this.deps.log.info(
      { target: a.name, trigger, outcome: report.outcome, resources: report.resources.length },
      'sync finished',
    );
    return attempts;
  }

  /** After a sync: watch the kinds it applied, and tell health and what a sync would still change. */
  private async tellAfterSync(
    a: Assignment,
    result: SyncResult,
    only: Set<string> | undefined,
  ): Promise<void> {
    await this.view.watchKinds();
    const health = this.view.healthReport(result.live);
    if (health) await this.view.emit([health]);
    if (!only && result.report.outcome !== 'Succeeded') await this.view.compareUnreached(result.live);
    const comparison = this.view.comparison.report(a, this.deps.now());
    if (comparison) await this.view.emit([comparison]);
  }

  /** The next look after a sync: heals back off, failed automated syncs retry as their policy says. */
  private scheduleAfterSync(
    a: Assignment,
    report: SyncReport,
    only: Set<string> | undefined,
    attempts: number,
  ): void {
    const failedNow = report.outcome === 'Failed' || report.outcome === 'Partial';
    if (report.outcome === 'Succeeded') {
      this.ctx.pacing.succeeded();
    } else if (only) {
      // A failed heal is looked at again, but never in a tight loop against a struggling API server.
      this.ctx.retry.schedule(new Date(this.deps.now().getTime() + this.ctx.pacing.failedDelayMs()));
    } else if (failedNow && a.syncPolicy.automated) {
      const at = nextRetryAt(effectiveRetryPolicy(a.syncPolicy), attempts, new Date(report.at));
      if (at) this.ctx.retry.schedule(at);
      else this.deps.log.warn({ target: a.name, attempts }, 'sync failed; no retry left');
    }
  }
}
