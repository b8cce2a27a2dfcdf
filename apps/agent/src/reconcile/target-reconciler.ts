import { randomUUID } from 'node:crypto';
import {
  type Assignment,
  type Bundle,
  type DriftReport,
  type HealthStatus,
  TRACKING_LABEL,
  TRACKING_LABEL_VALUE,
  groupOf,
  type KubeObject,
  type ObjectRef,
  type Report,
  type SyncOperation,
  type SyncReport,
  type SyncTrigger,
} from '@flotilla/contract';
import { type Logger } from 'pino';
import { type DriftDiffer, driftOptionsOf } from '../drift/drift-differ.js';
import { blameManager } from '../drift/blame-manager.js';
import { endedBreakGlass, FightDetector } from '../drift/fight-detector.js';
import { TargetComparison } from '../drift/target-comparison.js';
import { sopsEncryptedRefs } from '../secrets/bundle-decryptor.js';
import { type HealthAssessor, aggregateHealth } from '../health/target-health.js';
import { type KubeClient, idOf } from '../kube/kube-client.js';
import { type ResourceId, type StateStore, type TargetState } from '../state/state-store.js';
import { dryRunSync } from '../sync/dry-run-sync.js';
import { prepareObject } from '../sync/prepare-object.js';
import { keyOf, refOfId } from '../sync/resource-ref.js';
import { syncTarget } from '../sync/sync-target.js';
import { type GateAction, type GateDecision } from '../windows/sync-gate.js';
import { type RollbackHook } from '../rollback/auto-rollback.js';
import { type ClusterEvent, eventsOfReport } from '../events/cluster-events.js';
import { nextRetryAt, retryOutlook, effectiveRetryPolicy } from './sync-retry.js';

/** A timer may fire a millisecond or so before the clock says it is due: that counts as due. */
const TIMER_SLACK_MS = 10;

/** The live view the reconciler reads: the watch cache, kept fresh by informers. */
export interface LiveView {
  ensure(apiVersion: string, kind: string): Promise<void>;
  cached(apiVersion: string, kind: string, name: string, namespace?: string): KubeObject | undefined;
  isWatching(apiVersion: string, kind: string): boolean;
}

export interface ReconcilerDeps {
  kube: KubeClient;
  live: LiveView;
  store: StateStore;
  differ: DriftDiffer;
  health: HealthAssessor;
  gate: (assignment: Assignment, action: GateAction, at: Date) => GateDecision;
  emit: (reports: Report[]) => Promise<void>;
  log: Logger;
  now: () => Date;
  /** Delay between consecutive self-heals of one target: initial, doubling, capped. */
  healBackoff: { initialMs: number; maxMs: number };
  /** How long a sync waits for one wave to be healthy (or a hook to finish), and how often it looks. */
  syncWait?: { timeoutMs: number; pollMs: number };
  /** Automatic rollback (apps/agent/src/rollback); absent: never roll back on its own. */
  rollback?: RollbackHook;
  /** Kubernetes Events about what the reports say was done (events/); absent: none are written. */
  recordEvents?: (events: ClusterEvent[]) => void;
  /**
   * The user a target's syncs write as (its project's ServiceAccount, impersonated); absent: the
   * agent itself. Watches, drift reads and Events stay the agent's own.
   */
  writeAs?: (assignment: Assignment) => string;
}

interface Drifted {
  key: string;
  id: ResourceId;
  paths: string[];
  manager?: string;
  /** First time this drift is seen (not yet reported). */
  isNew: boolean;
}

/**
 * Keeps one target converged: syncs new revisions, watches what it applied, reports drift and
 * heals it when allowed, judges health. All work for a target runs one step at a time.
 */
export class TargetReconciler {
  private desired: KubeObject[] = [];
  private desiredByKey = new Map<string, KubeObject>();
  private chain: Promise<void> = Promise.resolve();
  private readonly dirty = new Set<string>();
  private dirtyTimer: NodeJS.Timeout | undefined;
  private retryTimer: NodeJS.Timeout | undefined;
  private retryAt = Infinity;
  private stopped = false;
  /** Cuts short a sync waiting for health when the agent stops. */
  private readonly stopping = new AbortController();
  /** The requested sync running now, and how to terminate it when a person asks (see update). */
  private running: { id: string; terminate: AbortController } | undefined;
  /** Drift already reported per object (signature of its paths), so a standing drift is told once. */
  private readonly reportedDrift = new Map<string, string>();
  private readonly fights = new FightDetector();
  /** What a sync would change, as last compared: told to the hub when it changes. */
  private readonly comparison = new TargetComparison();
  private healStreak = 0;
  private lastHealAt = 0;
  private lastHealth: string | undefined;
  /** The target's health as last judged (told to the hub or not), for automatic rollback. */
  private lastStatus: HealthStatus | undefined;
  /** Failed self-heals in a row, for their back-off. */
  private failedHeals = 0;
  /** Consecutive reconcile steps that threw (a disk or hub error outside the sync itself). */
  private failedSteps = 0;
  private blockedReported: string | undefined;
  /** Declared objects the watch cannot see (no tracking label yet), as last read, for health. */
  private readonly unwatched = new Map<string, KubeObject>();

  private constructor(
    private readonly deps: ReconcilerDeps,
    private assignment: Assignment,
    private bundle: Bundle,
    private state: TargetState,
  ) {}

  static async start(
    deps: ReconcilerDeps,
    assignment: Assignment,
    bundle: Bundle,
  ): Promise<TargetReconciler> {
    const state = await deps.store.loadTargetState(assignment.targetId);
    const r = new TargetReconciler(deps, assignment, bundle, state);
    r.enqueue('start', () => r.converge('start'));
    return r;
  }

  get targetId(): string {
    return this.assignment.targetId;
  }

  /** A new assignment from the hub (possibly the same); syncs when the desired state changed. */
  update(assignment: Assignment, bundle: Bundle): void {
    const newRevision = assignment.bundleDigest !== this.assignment.bundleDigest;
    const overrideEnded = endedBreakGlass(this.assignment.breakGlass, assignment.breakGlass).length > 0;
    this.assignment = assignment;
    this.bundle = bundle;
    // Terminating is the one request that must reach a sync while it runs, not after it.
    const running = this.running;
    const stop = running && assignment.operations.find((o) => o.id === running.id)?.terminate;
    if (stop && !running.terminate.signal.aborted) {
      this.deps.log.info({ target: assignment.name, operation: running.id, ...stop }, 'terminating sync');
      running.terminate.abort(terminatedBy(stop));
    }
    // The heals after a break-glass revert the incident's manual changes: a fresh count, not round N.
    if (overrideEnded && !newRevision) this.fights.clear();
    if (newRevision) {
      this.fights.clear();
      this.state.contested = {};
      this.reportedDrift.clear();
    }
    this.enqueue('assignment', () => this.converge('assignment'));
  }

  /**
   * The health rules changed: the same objects judged again (reported if the verdict moved, and an
   * automatic rollback considered as after any change of health).
   */
  reassessHealth(): void {
    this.enqueue('health-rules', async () => {
      await this.emitHealthIfChanged(new Map());
      await this.maybeRollBack();
    });
  }

  /** The periodic safety net: full comparison against fresh reads, not the watch cache. */
  resync(): void {
    this.enqueue('resync', () => this.converge('resync'));
  }

  /** A watched object changed; cheap to call for objects this target does not track. */
  notify(obj: KubeObject): void {
    const key = keyOf(idOf(obj));
    if (!this.desiredByKey.has(key) || this.stopped) return;
    this.dirty.add(key);
    // Coalesce a burst of events (an apply touches several objects) into one comparison.
    this.dirtyTimer ??= setTimeout(() => {
      this.dirtyTimer = undefined;
      const keys = [...this.dirty];
      this.dirty.clear();
      this.enqueue('watch', () => this.checkDrift(keys, false));
    }, 25);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.stopping.abort();
    clearTimeout(this.dirtyTimer);
    clearTimeout(this.retryTimer);
    await this.chain;
  }

  private enqueue(what: string, step: () => Promise<void>): void {
    if (this.stopped) return;
    this.chain = this.chain.then(async () => {
      if (this.stopped) return;
      try {
        await step();
      } catch (err) {
        // Retried with the same back-off as a failed sync: never every few seconds against a
        // struggling API server or a full disk.
        const { initialMs, maxMs } = this.deps.healBackoff;
        const delay = Math.min(maxMs, Math.max(initialMs, 5_000) * 2 ** this.failedSteps++);
        this.deps.log.error(
          { target: this.assignment.name, step: what, err, retryInMs: delay },
          'reconcile step failed',
        );
        this.scheduleRetry(new Date(this.deps.now().getTime() + delay));
        return;
      }
      this.failedSteps = 0;
    });
  }

  /** Sync when the desired revision was never (successfully) applied, otherwise compare and heal. */
  private async converge(why: string): Promise<void> {
    const a = this.assignment;
    // A sync a person asked for comes first, automated or not.
    const operation = a.operations.find((o) => !this.state.startedOperations.includes(o.id));
    if (operation) {
      await this.manualSync(operation);
      return;
    }
    const last = this.state.lastSync;
    const failed = this.failedHere();
    const needsSync = failed || !this.attemptedHere();
    if (needsSync && a.syncPolicy.automated) {
      // A failed revision is tried again only as its retry policy says, never on every resync.
      // (A state saved before the count existed says 0 attempts: the failure it records is one.)
      const now = this.deps.now();
      const dueAt =
        failed && last
          ? nextRetryAt(effectiveRetryPolicy(a.syncPolicy), Math.max(1, last.attempts), new Date(last.at))
          : now;
      if (dueAt && dueAt.getTime() <= now.getTime() + TIMER_SLACK_MS) {
        await this.autoSync();
        return;
      }
      if (dueAt) this.scheduleRetry(dueAt);
    }
    await this.prepareDesired();
    await this.checkDrift([...this.desiredByKey.keys()], why === 'resync' || why === 'start');
  }

  /** Whether the last full sync was of this assignment's bundle and revision. */
  private attemptedHere(): boolean {
    const last = this.state.lastSync;
    // A new commit that renders the same bundle still gets its sync run, as in Argo CD.
    return (
      !!last && last.digest === this.assignment.bundleDigest && last.revision === this.assignment.revision
    );
  }

  /** Whether the last full sync of this bundle and revision failed (in whole or in part). */
  private failedHere(): boolean {
    const outcome = this.state.lastSync?.outcome;
    return this.attemptedHere() && (outcome === 'Failed' || outcome === 'Partial');
  }

  private async autoSync(): Promise<void> {
    const a = this.assignment;
    const decision = this.deps.gate(a, 'auto', this.deps.now());
    if (!decision.allowed) {
      await this.block('auto', decision);
      return;
    }
    await this.runSync('auto', undefined, decision.breakGlassId);
    this.blockedReported = undefined;
  }

  /**
   * Carries out an operation once: its id is saved as started before anything is applied. Refused
   * by the gate (a window without manualSync), it is reported Blocked; the report closes it on the hub.
   */
  private async manualSync(operation: SyncOperation): Promise<void> {
    const a = this.assignment;
    this.state.startedOperations = [...this.state.startedOperations, operation.id].slice(-200);
    await this.deps.store.saveTargetState(a.targetId, this.state);
    this.deps.log.info(
      { target: a.name, operation: operation.id, requestedBy: operation.requestedBy },
      'sync requested',
    );
    if (operation.terminate) {
      // Terminated before it started: one report closes it, nothing applied.
      const at = this.deps.now().toISOString();
      await this.emit([
        {
          type: 'sync',
          id: randomUUID(),
          targetId: a.targetId,
          at,
          revision: a.revision,
          bundleDigest: a.bundleDigest,
          trigger: 'manual',
          outcome: 'Terminated',
          startedAt: at,
          finishedAt: at,
          message: `${terminatedBy(operation.terminate)} before it started; nothing applied`,
          resources: [],
          operationId: operation.id,
          ...(operation.dryRun && { dryRun: true }),
        },
      ]);
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
      await this.prepareDesired();
      const keys = operation.resources.map((r) => `${r.group}/${r.kind}/${r.namespace ?? ''}/${r.name}`);
      const missing = keys.filter((k) => !this.desiredByKey.has(k));
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
    const a = this.assignment;
    const at = this.deps.now().toISOString();
    await this.emit([
      {
        type: 'sync',
        id: randomUUID(),
        targetId: a.targetId,
        at,
        revision: a.revision,
        bundleDigest: a.bundleDigest,
        trigger: 'manual',
        outcome,
        startedAt: at,
        finishedAt: at,
        message,
        resources: [],
        operationId: operation.id,
      },
    ]);
  }

  /**
   * A dry run changes nothing, so no window holds it: people preview before a window opens. What a
   * real sync would meet now is said in its message. Its report goes out without cluster Events
   * (those would announce syncs and prunes that did not happen) and moves no state of the target.
   */
  private async dryRun(operation: SyncOperation, decision: GateDecision): Promise<void> {
    const a = this.assignment;
    const report = await dryRunSync({
      kube: this.writer(a),
      // Per-run sync options shape what the server is asked; a dry run covers the whole target.
      assignment: runAssignment(a, operation),
      manifests: this.bundle.manifests,
      inventory: this.state.inventory,
      prune: operation.prune,
      now: this.deps.now,
    });
    report.operationId = operation.id;
    if (!decision.allowed) report.message += `; a sync now would be blocked: ${decision.message}`;
    await this.deps.emit([report]);
    this.deps.log.info({ target: a.name, outcome: report.outcome }, 'dry-run sync reported');
  }

  /** The client a sync of `a` writes with: impersonating its project's ServiceAccount when so configured. */
  private writer(a: Assignment): KubeClient {
    const user = this.deps.writeAs?.(a);
    if (user === undefined) return this.deps.kube;
    if (!this.deps.kube.impersonating) throw new Error('this Kubernetes client cannot impersonate');
    return this.deps.kube.impersonating(user);
  }

  private async runSync(
    trigger: SyncTrigger,
    only: Set<string> | undefined,
    breakGlassId?: string,
    rolledBackFrom?: SyncReport['rolledBackFrom'],
    operation?: SyncOperation,
  ): Promise<SyncReport> {
    const a = this.assignment;
    const input: Parameters<typeof syncTarget>[0] = {
      kube: this.writer(a),
      // A requested prune and sync options apply to this run only.
      assignment: operation ? runAssignment(a, operation) : a,
      manifests: this.bundle.manifests,
      inventory: this.state.inventory,
      trigger,
      health: this.deps.health,
      now: this.deps.now,
      signal: this.stopping.signal,
      differ: this.deps.differ,
    };
    if (this.deps.syncWait) {
      input.waitTimeoutMs = this.deps.syncWait.timeoutMs;
      input.pollMs = this.deps.syncWait.pollMs;
    }
    if (only) input.only = only;
    if (breakGlassId) input.breakGlassId = breakGlassId;
    if (operation) {
      this.running = { id: operation.id, terminate: new AbortController() };
      input.terminate = this.running.terminate.signal;
      // Asked between reading the operation and this point: stop before the first object.
      const stop = this.assignment.operations.find((o) => o.id === operation.id)?.terminate;
      if (stop) this.running.terminate.abort(terminatedBy(stop));
    }
    const inventoryBefore = this.state.inventory;
    let result: Awaited<ReturnType<typeof syncTarget>>;
    try {
      result = await syncTarget(input);
    } finally {
      this.running = undefined;
    }
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
    this.setDesired(result.desired, a.bundleDigest);
    // What this run applied carries the tracking label now: the watch sees it from here on.
    for (const key of result.live.keys()) this.unwatched.delete(key);
    for (const [key, live] of result.live) this.compare(key, live);
    this.state.inventory = result.inventory;
    if (result.interrupted) {
      // Stopping is not failing: keep tracking what was applied, and run this revision again
      // after the restart (no report of a failure, no back-off, no rollback bookkeeping). A
      // requested sync cut short this way is run again then too: nothing was reported for it.
      if (operation)
        this.state.startedOperations = this.state.startedOperations.filter((id) => id !== operation.id);
      await this.deps.store.saveTargetState(a.targetId, this.state);
      this.deps.log.info({ target: a.name, trigger }, 'sync interrupted: the agent is stopping');
      return result.report;
    }
    const failedNow = result.report.outcome === 'Failed' || result.report.outcome === 'Partial';
    // Failed syncs of one revision in a row; a sync a person asked for starts the count again.
    const attempts = !failedNow
      ? 0
      : trigger !== 'manual' && this.attemptedHere()
        ? Math.max(1, this.state.lastSync?.attempts ?? 0) + 1
        : 1;
    const retry = effectiveRetryPolicy(a.syncPolicy);
    if (failedNow && !only && a.syncPolicy.automated)
      result.report.message = [
        result.report.message,
        retryOutlook(retry, attempts, new Date(result.report.at)),
      ]
        .filter((m) => m)
        .join('; ');
    // The report goes to the on-disk queue before the state that says the sync happened: a crash
    // in between replays the sync (a new report, harmless), never loses the report.
    await this.emit([result.report], inventoryBefore);
    if (!only)
      this.state.lastSync = {
        digest: a.bundleDigest,
        revision: a.revision,
        outcome: result.report.outcome,
        at: result.report.at,
        attempts,
      };
    this.state.pendingIntent = null;
    const writesAs = this.deps.writeAs?.(a);
    if (writesAs !== undefined) this.state.writesAs = writesAs;
    else delete this.state.writesAs;
    await this.deps.store.saveTargetState(a.targetId, this.state);
    if (!only) await this.deps.rollback?.synced(a, result.report);
    this.deps.log.info(
      { target: a.name, trigger, outcome: result.report.outcome, resources: result.report.resources.length },
      'sync finished',
    );
    await this.watchKinds();
    const health = this.healthReport(result.live);
    if (health) await this.emit([health]);
    if (!only && result.report.outcome !== 'Succeeded') await this.compareUnreached(result.live);
    const comparison = this.comparison.report(a, this.deps.now());
    if (comparison) await this.emit([comparison]);
    if (result.report.outcome === 'Succeeded') {
      this.failedHeals = 0;
    } else if (only) {
      // A failed heal is looked at again, but never in a tight loop against a struggling API server.
      const { initialMs, maxMs } = this.deps.healBackoff;
      const delay = Math.min(maxMs, initialMs * 2 ** this.failedHeals++);
      this.scheduleRetry(new Date(this.deps.now().getTime() + delay));
    } else if (failedNow && a.syncPolicy.automated) {
      const at = nextRetryAt(retry, attempts, new Date(result.report.at));
      if (at) this.scheduleRetry(at);
      else this.deps.log.warn({ target: a.name, attempts }, 'sync failed; no retry left');
    }
    if (!only && trigger !== 'rollback') await this.maybeRollBack();
    return result.report;
  }

  /** Rebuild the prepared desired objects from the bundle (after a restart, no sync needed). */
  private async prepareDesired(): Promise<void> {
    if (this.desired.length > 0 && this.desiredFor === this.assignment.bundleDigest) return;
    const prepared: KubeObject[] = [];
    for (const m of this.bundle.manifests) {
      try {
        prepared.push(await prepareObject(this.deps.kube, this.assignment, m));
      } catch (err) {
        this.deps.log.warn(
          { target: this.assignment.name, err: (err as Error).message },
          'cannot resolve object',
        );
      }
    }
    this.setDesired(prepared, this.assignment.bundleDigest);
    await this.watchKinds();
  }

  private desiredFor: string | undefined;

  private setDesired(objects: KubeObject[], digest: string): void {
    this.desired = objects;
    this.desiredFor = digest;
    this.desiredByKey = new Map(objects.map((o) => [keyOf(idOf(o)), o]));
    this.comparison.declared(this.desiredByKey.keys(), digest, sopsEncryptedRefs(this.bundle));
    for (const key of this.unwatched.keys()) if (!this.desiredByKey.has(key)) this.unwatched.delete(key);
  }

  private async watchKinds(): Promise<void> {
    const kinds = new Map(this.desired.map((o) => [`${o.apiVersion}/${o.kind}`, o]));
    for (const o of kinds.values()) {
      try {
        await this.deps.live.ensure(o.apiVersion, o.kind);
      } catch (err) {
        this.deps.log.warn(
          { kind: `${o.apiVersion}/${o.kind}`, err: (err as Error).message },
          'cannot watch kind',
        );
      }
    }
  }

  /**
   * The live object: from the watch cache when its kind is watched and the cache has it, else read.
   * The watch sees only objects with the tracking label, so a miss is an object that is gone, one
   * whose label someone removed, or one an agent before the label applied: a read tells which.
   */
  private async liveOf(obj: KubeObject, fresh: boolean): Promise<KubeObject | undefined> {
    const id = idOf(obj);
    const key = keyOf(id);
    if (!fresh && this.deps.live.isWatching(id.apiVersion, id.kind)) {
      const cached = this.deps.live.cached(id.apiVersion, id.kind, id.name, id.namespace);
      if (cached) {
        this.unwatched.delete(key);
        return cached;
      }
    }
    const live = await this.deps.kube.get(id);
    if (live && live.metadata.labels?.[TRACKING_LABEL] !== TRACKING_LABEL_VALUE)
      this.unwatched.set(key, live);
    else this.unwatched.delete(key);
    return live;
  }

  /** Compare the given objects with the cluster; report what drifted, heal it when allowed, re-judge health. */
  private async checkDrift(keys: string[], fresh: boolean): Promise<void> {
    const a = this.assignment;
    const reports: Report[] = [];
    const drifted: Drifted[] = [];
    const liveByKey = new Map<string, KubeObject>();
    for (const key of keys) {
      const desired = this.desiredByKey.get(key);
      if (!desired) continue;
      const live = await this.liveOf(desired, fresh);
      const id = idOf(desired);
      let paths: string[];
      let manager: string | undefined;
      if (!live) {
        paths = [''];
        this.comparison.record(key, desired, undefined, []);
      } else {
        liveByKey.set(key, live);
        const diff = this.deps.differ(desired, live, driftOptionsOf(desired, a));
        this.comparison.record(key, desired, live, diff.differences);
        if (diff.inSync) {
          this.reportedDrift.delete(key);
          continue;
        }
        paths = [...new Set(diff.differences.map((d) => d.path))].sort();
        manager = blameManager(live, diff.differences);
      }
      if (this.state.contested[key] !== undefined) continue;
      const signature = paths.join('\n');
      const d: Drifted = { key, id, paths, isNew: this.reportedDrift.get(key) !== signature };
      if (manager) d.manager = manager;
      drifted.push(d);
      if (d.isNew) {
        this.reportedDrift.set(key, signature);
        reports.push(this.driftReport('detected', d));
        this.deps.log.info({ target: a.name, object: key, paths, manager }, 'drift detected');
      }
    }
    const comparison = this.comparison.report(a, this.deps.now());
    if (comparison) reports.push(comparison);
    if (reports.length > 0) await this.emit(reports);
    // After a failed sync of this revision only its retry policy syncs again: self-heal would
    // otherwise retry it object by object without a limit (Argo CD does not heal then either).
    const heals = a.syncPolicy.automated && a.syncPolicy.selfHeal && !this.failedHere();
    if (drifted.length > 0 && heals) await this.heal(drifted);
    else await this.emitHealthIfChanged(liveByKey);
    await this.maybeRollBack();
  }

  /**
   * A revision still failing its deadline after it was applied is replaced by the last healthy
   * bundle (see rollback/). Not held by sync windows: it restores what ran before the change.
   */
  private async maybeRollBack(): Promise<void> {
    const hook = this.deps.rollback;
    if (!hook || this.lastStatus === undefined) return;
    const verdict = await hook.judged(this.assignment, this.lastStatus, this.deps.now());
    if (verdict.recheckAt) this.scheduleRetry(new Date(verdict.recheckAt.getTime() + 100));
    const order = verdict.order;
    if (!order) return;
    this.assignment = order.assignment;
    this.bundle = order.bundle;
    this.fights.clear();
    this.state.contested = {};
    this.reportedDrift.clear();
    await this.runSync('rollback', undefined, undefined, order.rolledBackFrom);
  }

  private async heal(drifted: Drifted[]): Promise<void> {
    const a = this.assignment;
    const now = this.deps.now();
    const decision = this.deps.gate(a, 'self-heal', now);
    if (!decision.allowed) {
      if (decision.reason === 'paused') {
        const tolerated = drifted
          .filter((d) => d.isNew)
          .map((d) => this.driftReport('tolerated', d, decision.breakGlassId));
        if (tolerated.length > 0) await this.emit(tolerated);
        if (decision.retryAt) this.scheduleRetry(decision.retryAt);
      } else {
        await this.block('self-heal', decision);
      }
      return;
    }
    // Waiting out the back-off comes first: a round is a heal made, so a drift looked at again while
    // waiting is not counted twice towards a fight.
    const at = this.nextHealTime();
    if (at.getTime() > now.getTime()) {
      this.scheduleRetry(at);
      return;
    }
    const contested: Report[] = [];
    const toHeal = drifted.filter((d) => {
      if (!this.fights.record(d.key, d.paths, d.manager, now.getTime())) return true;
      this.state.contested[d.key] = d.manager ?? 'unknown';
      contested.push(this.driftReport('contested', d));
      this.deps.log.warn(
        { target: a.name, object: d.key, manager: d.manager },
        'self-heal contested; giving up on object',
      );
      return false;
    });
    if (contested.length > 0) {
      await this.deps.store.saveTargetState(a.targetId, this.state);
      await this.emit(contested);
    }
    if (toHeal.length === 0) return;
    this.healStreak = now.getTime() - this.lastHealAt > this.deps.healBackoff.maxMs ? 1 : this.healStreak + 1;
    this.lastHealAt = now.getTime();
    const report = await this.runSync('self-heal', new Set(toHeal.map((d) => d.key)), decision.breakGlassId);
    const failed = new Set(
      report.resources
        .filter((r) => r.action === 'failed')
        .map((r) => `${r.group}/${r.kind}/${r.namespace ?? ''}/${r.name}`),
    );
    const healed: Drifted[] = [];
    for (const d of toHeal) {
      if (failed.has(d.key)) continue;
      // "Healed" only once the cluster says so: a writer that put its value straight back (or an
      // apply the server changed) is still drift, looked at again after the back-off.
      if (await this.inSyncNow(d.key)) healed.push(d);
      else {
        this.deps.log.warn({ target: a.name, object: d.key }, 'still drifted right after the heal');
        this.scheduleRetry(this.nextHealTime());
      }
    }
    for (const d of healed) this.reportedDrift.delete(d.key);
    if (healed.length > 0)
      await this.emit(healed.map((d) => this.driftReport('healed', d, decision.breakGlassId)));
  }

  /** Records what a sync would change on one declared object, given how it runs now. */
  /**
   * After a run that stopped short (terminated, a failed wave): what Git declares is still the
   * whole bundle, not just what the run reached, so the comparison covers the objects it never
   * applied too — a target whose sync was cut short is not shown in sync.
   */
  private async compareUnreached(reached: ReadonlyMap<string, KubeObject>): Promise<void> {
    const applied = this.desired;
    this.desired = [];
    await this.prepareDesired();
    if (this.desired.length === 0) this.setDesired(applied, this.assignment.bundleDigest);
    // A namespace-scoped agent reads nothing outside its namespaces (it has no right to): what the
    // run refused there is compared as not in the cluster.
    const limit = this.deps.kube.namespaces;
    for (const [key, desired] of this.desiredByKey) {
      const outside = limit !== undefined && !limit.includes(desired.metadata.namespace ?? '');
      const live = reached.get(key) ?? (outside ? undefined : await this.liveOf(desired, true));
      if (live) this.compare(key, live);
      else this.comparison.record(key, desired, undefined, []);
    }
  }

  private compare(key: string, live: KubeObject): void {
    const desired = this.desiredByKey.get(key);
    if (!desired) return;
    const diff = this.deps.differ(desired, live, driftOptionsOf(desired, this.assignment));
    this.comparison.record(key, desired, live, diff.differences);
  }

  /** Whether the object, read afresh from the API server, matches what is desired. */
  private async inSyncNow(key: string): Promise<boolean> {
    const desired = this.desiredByKey.get(key);
    if (!desired) return false;
    let live: KubeObject | undefined;
    try {
      live = await this.deps.kube.get(idOf(desired));
    } catch {
      return false;
    }
    if (!live) return false;
    return this.deps.differ(desired, live, driftOptionsOf(desired, this.assignment)).inSync;
  }

  /** Earliest time the next self-heal may run: 2 s after the last, doubling per heal, capped. */
  private nextHealTime(): Date {
    const { initialMs, maxMs } = this.deps.healBackoff;
    if (this.healStreak === 0) return this.deps.now();
    const delay = Math.min(maxMs, initialMs * 2 ** (this.healStreak - 1));
    return new Date(this.lastHealAt + delay);
  }

  /** Remember that a window blocked us, tell the hub once, and look again when the window may change. */
  private async block(
    intent: 'auto' | 'self-heal',
    decision: Extract<GateDecision, { allowed: false }>,
  ): Promise<void> {
    const a = this.assignment;
    if (this.state.pendingIntent !== intent) {
      this.state.pendingIntent = intent;
      await this.deps.store.saveTargetState(a.targetId, this.state);
    }
    const signature = `${intent}:${a.bundleDigest}`;
    if (this.blockedReported !== signature) {
      this.blockedReported = signature;
      const at = this.deps.now().toISOString();
      await this.emit([
        {
          type: 'sync',
          id: randomUUID(),
          targetId: a.targetId,
          at,
          revision: a.revision,
          bundleDigest: a.bundleDigest,
          trigger: intent,
          outcome: 'Blocked',
          startedAt: at,
          finishedAt: at,
          message: decision.message,
          resources: [],
        },
      ]);
      this.deps.log.info({ target: a.name, intent, message: decision.message }, 'sync blocked');
    }
    if (decision.retryAt) this.scheduleRetry(new Date(decision.retryAt.getTime() + 1_000));
  }

  private scheduleRetry(at: Date): void {
    if (this.stopped) return;
    const when = at.getTime();
    if (this.retryTimer && when >= this.retryAt) return;
    clearTimeout(this.retryTimer);
    this.retryAt = when;
    // Timers beyond ~24 days overflow; the periodic resync covers anything that far out anyway.
    const delay = Math.min(Math.max(0, when - this.deps.now().getTime()), 2 ** 31 - 1);
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      this.retryAt = Infinity;
      this.enqueue('retry', () => this.converge('retry'));
    }, delay);
  }

  /**
   * Queues reports for the hub, then tells the cluster what they say as Events (only once the queue
   * holds them: an Event never describes a report that a crash could lose). `alsoKnown` resolves
   * objects no longer declared or inventoried, such as what this sync pruned.
   */
  private async emit(reports: Report[], alsoKnown: readonly ResourceId[] = []): Promise<void> {
    await this.deps.emit(reports);
    const record = this.deps.recordEvents;
    if (!record) return;
    const versions = new Map<string, string>();
    const know = (apiVersion: string, kind: string): void => {
      versions.set(`${groupOf(apiVersion)}/${kind}`, apiVersion);
    };
    for (const id of alsoKnown) know(id.apiVersion, id.kind);
    for (const id of this.state.inventory) know(id.apiVersion, id.kind);
    for (const o of this.bundle.manifests) know(o.apiVersion, o.kind);
    for (const o of this.desired) know(o.apiVersion, o.kind);
    const apiVersionOf = (ref: ObjectRef): string | undefined =>
      versions.get(`${ref.group}/${ref.kind}`) ?? (ref.group === '' ? 'v1' : undefined);
    for (const r of reports) {
      const events = eventsOfReport(r, this.assignment.name, apiVersionOf);
      if (events.length > 0) record(events);
    }
  }

  private driftReport(state: DriftReport['state'], d: Drifted, breakGlassId?: string): DriftReport {
    const report: DriftReport = {
      type: 'drift',
      id: randomUUID(),
      targetId: this.assignment.targetId,
      at: this.deps.now().toISOString(),
      state,
      resource: refOfId(d.id),
      paths: d.paths,
    };
    const manager = state === 'contested' ? (d.manager ?? 'unknown') : d.manager;
    if (manager) report.manager = manager;
    if (breakGlassId) report.breakGlassId = breakGlassId;
    return report;
  }

  private async emitHealthIfChanged(fresh: Map<string, KubeObject>): Promise<void> {
    const report = this.healthReport(fresh);
    if (report) await this.emit([report]);
  }

  /** A health report when the target's health differs from the last one told, else null. */
  private healthReport(fresh: Map<string, KubeObject>): Report | null {
    const objects = this.desired.map((o) => {
      const id = idOf(o);
      const key = keyOf(id);
      const live =
        fresh.get(key) ??
        this.deps.live.cached(id.apiVersion, id.kind, id.name, id.namespace) ??
        this.unwatched.get(key);
      return { ref: refOfId(id), live };
    });
    const health = aggregateHealth(objects, this.deps.health);
    this.lastStatus = health.status;
    const signature = JSON.stringify(health);
    if (signature === this.lastHealth) return null;
    this.lastHealth = signature;
    return {
      type: 'health',
      id: randomUUID(),
      targetId: this.assignment.targetId,
      at: this.deps.now().toISOString(),
      status: health.status,
      message: health.message,
      resources: health.resources,
    };
  }
}

function terminatedBy(t: NonNullable<SyncOperation['terminate']>): string {
  return `terminated by ${t.requestedBy}: ${t.reason}`;
}

/** The assignment as one requested run sees it: its prune and sync options over the appset's. */
function runAssignment(a: Assignment, operation: SyncOperation): Assignment {
  if (!operation.prune && !operation.syncPolicy) return a;
  return {
    ...a,
    syncPolicy: { ...a.syncPolicy, ...operation.syncPolicy, ...(operation.prune && { prune: true }) },
  };
}
