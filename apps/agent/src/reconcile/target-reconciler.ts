import {
  type Assignment,
  type Bundle,
  type DriftReport,
  type KubeObject,
  type Report,
} from '@flotilla/contract';
import { blameManager } from '../drift/blame-manager.js';
import { driftOptionsOf } from '../sync/apply-mode.js';
import { endedBreakGlass, FightDetector } from '../drift/fight-detector.js';
import { idOf } from '../kube/kube-client.js';
import { keyOf } from '../sync/resource-ref.js';
import { type GateDecision } from '../windows/sync-gate.js';
import { HealPacing } from './heal-pacing.js';
import { type ReconcilerDeps } from './reconciler-deps.js';
import { RetryTimer } from './retry-timer.js';
import { effectiveRetryPolicy, nextRetryAt } from './sync-retry.js';
import { type Drifted, driftReport, nothingAppliedReport } from './target-reports.js';
import { TargetSyncer } from './target-syncer.js';
import { TargetView } from './target-view.js';

/** A timer may fire a millisecond or so before the clock says it is due: that counts as due. */
const TIMER_SLACK_MS = 10;

/**
 * Keeps one target converged: syncs new revisions, watches what it applied, reports drift and
 * heals it when allowed, judges health. All work for a target runs one step at a time.
 */
export class TargetReconciler {
  private readonly view: TargetView;
  private readonly syncer: TargetSyncer;
  private chain: Promise<void> = Promise.resolve();
  private readonly dirty = new Set<string>();
  private dirtyTimer: NodeJS.Timeout | undefined;
  /** When to look again: a retry, a window opening, a heal's back-off, a rollback deadline. */
  private readonly retry: RetryTimer;
  private stopped = false;
  /** Cuts short a sync waiting for health when the agent stops. */
  private readonly stopping = new AbortController();
  /** Drift already reported per object (signature of its paths), so a standing drift is told once. */
  private readonly reportedDrift = new Map<string, string>();
  private readonly fights = new FightDetector();
  private readonly pacing: HealPacing;
  /** Consecutive reconcile steps that threw (a disk or hub error outside the sync itself). */
  private failedSteps = 0;
  private blockedReported: string | undefined;

  private constructor(
    private readonly deps: ReconcilerDeps,
    view: TargetView,
  ) {
    this.view = view;
    this.retry = new RetryTimer(deps.now, () => this.enqueue('retry', () => this.converge('retry')));
    this.pacing = new HealPacing(deps.healBackoff);
    this.syncer = new TargetSyncer(deps, view, {
      signal: this.stopping.signal,
      retry: this.retry,
      pacing: this.pacing,
      rollBackIfDue: () => this.maybeRollBack(),
    });
  }

  static async start(
    deps: ReconcilerDeps,
    assignment: Assignment,
    bundle: Bundle,
  ): Promise<TargetReconciler> {
    const state = await deps.store.loadTargetState(assignment.targetId);
    const r = new TargetReconciler(deps, new TargetView(deps, assignment, bundle, state));
    r.enqueue('start', () => r.converge('start'));
    return r;
  }

  get targetId(): string {
    return this.view.assignment.targetId;
  }

  /** A new assignment from the hub (possibly the same); syncs when the desired state changed. */
  update(assignment: Assignment, bundle: Bundle): void {
    const newRevision = assignment.bundleDigest !== this.view.assignment.bundleDigest;
    const overrideEnded = endedBreakGlass(this.view.assignment.breakGlass, assignment.breakGlass).length > 0;
    this.view.assignment = assignment;
    this.view.bundle = bundle;
    this.syncer.terminateIfAsked(assignment.operations);
    // The heals after a break-glass revert the incident's manual changes: a fresh count, not round N.
    if (overrideEnded && !newRevision) this.fights.clear();
    if (overrideEnded) {
      // A heal held by a window from here on is a new hold, told again (history, log) even if the
      // same revision was held before the override.
      this.blockedReported = undefined;
      this.deps.log.info(
        { target: assignment.name },
        'break-glass ended; drift is healed when windows allow',
      );
    }
    if (newRevision) {
      this.fights.clear();
      this.view.state.contested = {};
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
      await this.view.emitHealthIfChanged(new Map());
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
    if (!this.view.desiredByKey.has(key) || this.stopped) return;
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
    this.retry.stop();
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
          { target: this.view.assignment.name, step: what, err, retryInMs: delay },
          'reconcile step failed',
        );
        this.retry.schedule(new Date(this.deps.now().getTime() + delay));
        return;
      }
      this.failedSteps = 0;
    });
  }

  /** Sync when the desired revision was never (successfully) applied, otherwise compare and heal. */
  private async converge(why: string): Promise<void> {
    const a = this.view.assignment;
    // A sync a person asked for comes first, automated or not.
    const operation = a.operations.find((o) => !this.view.state.startedOperations.includes(o.id));
    if (operation) {
      await this.syncer.manualSync(operation);
      return;
    }
    const last = this.view.state.lastSync;
    const failed = this.view.failedHere();
    const needsSync = failed || !this.view.attemptedHere();
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
      if (dueAt) this.retry.schedule(dueAt);
    }
    await this.view.prepareDesired();
    await this.view.lookForLeftovers();
    await this.checkDrift([...this.view.desiredByKey.keys()], why === 'resync' || why === 'start');
  }

  private async autoSync(): Promise<void> {
    const a = this.view.assignment;
    const decision = this.deps.gate(a, 'auto', this.deps.now());
    if (!decision.allowed) {
      await this.block('auto', decision);
      return;
    }
    await this.syncer.runSync('auto', undefined, decision.breakGlassId);
    this.blockedReported = undefined;
  }

  /** Compare the given objects with the cluster; report what drifted, heal it when allowed, re-judge health. */
  private async checkDrift(keys: string[], fresh: boolean): Promise<void> {
    const a = this.view.assignment;
    const reports: Report[] = [];
    const drifted: Drifted[] = [];
    const liveByKey = new Map<string, KubeObject>();
    for (const key of keys) {
      const desired = this.view.desiredByKey.get(key);
      if (!desired) continue;
      const live = await this.view.liveOf(desired, fresh);
      const id = idOf(desired);
      let paths: string[];
      let manager: string | undefined;
      if (!live) {
        paths = [''];
        this.view.comparison.record(key, desired, undefined, []);
      } else {
        liveByKey.set(key, live);
        const diff = this.deps.differ(desired, live, driftOptionsOf(desired, a));
        this.view.comparison.record(key, desired, live, diff.differences);
        if (diff.inSync) {
          this.reportedDrift.delete(key);
          continue;
        }
        paths = [...new Set(diff.differences.map((d) => d.path))].sort();
        manager = blameManager(live, diff.differences);
      }
      if (this.view.state.contested[key] !== undefined) continue;
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
    const comparison = this.view.comparison.report(a, this.deps.now());
    if (comparison) reports.push(comparison);
    if (reports.length > 0) await this.view.emit(reports);
    // After a failed sync of this revision only its retry policy syncs again: self-heal would
    // otherwise retry it object by object without a limit (Argo CD does not heal then either).
    const heals = a.syncPolicy.automated && a.syncPolicy.selfHeal && !this.view.failedHere();
    if (drifted.length > 0 && heals) await this.heal(drifted);
    else await this.view.emitHealthIfChanged(liveByKey);
    await this.maybeRollBack();
  }

  /**
   * A revision still failing its deadline after it was applied is replaced by the last healthy
   * bundle (see rollback/). Not held by sync windows: it restores what ran before the change.
   */
  private async maybeRollBack(): Promise<void> {
    const hook = this.deps.rollback;
    if (!hook || this.view.lastStatus === undefined) return;
    const verdict = await hook.judged(this.view.assignment, this.view.lastStatus, this.deps.now());
    if (verdict.recheckAt) this.retry.schedule(new Date(verdict.recheckAt.getTime() + 100));
    const order = verdict.order;
    if (!order) return;
    this.view.assignment = order.assignment;
    this.view.bundle = order.bundle;
    this.fights.clear();
    this.view.state.contested = {};
    this.reportedDrift.clear();
    await this.syncer.runSync('rollback', undefined, undefined, order.rolledBackFrom);
  }

  private async heal(drifted: Drifted[]): Promise<void> {
    const a = this.view.assignment;
    const now = this.deps.now();
    const decision = this.deps.gate(a, 'self-heal', now);
    if (!decision.allowed) {
      if (decision.reason === 'paused') {
        const tolerated = drifted
          .filter((d) => d.isNew)
          .map((d) => this.driftReport('tolerated', d, decision.breakGlassId));
        if (tolerated.length > 0) await this.view.emit(tolerated);
        if (decision.retryAt) this.retry.schedule(decision.retryAt);
      } else {
        await this.block('self-heal', decision);
      }
      return;
    }
    // Waiting out the back-off comes first: a round is a heal made, so a drift looked at again while
    // waiting is not counted twice towards a fight.
    const at = this.pacing.nextHealTime(this.deps.now());
    if (at.getTime() > now.getTime()) {
      this.retry.schedule(at);
      return;
    }
    const contested: Report[] = [];
    const toHeal = drifted.filter((d) => {
      if (!this.fights.record(d.key, d.paths, d.manager, now.getTime())) return true;
      this.view.state.contested[d.key] = d.manager ?? 'unknown';
      contested.push(this.driftReport('contested', d));
      this.deps.log.warn(
        { target: a.name, object: d.key, manager: d.manager },
        'self-heal contested; giving up on object',
      );
      return false;
    });
    if (contested.length > 0) {
      await this.deps.store.saveTargetState(a.targetId, this.view.state);
      await this.view.emit(contested);
    }
    if (toHeal.length === 0) return;
    this.pacing.healing(now);
    this.blockedReported = undefined;
    const report = await this.syncer.runSync(
      'self-heal',
      new Set(toHeal.map((d) => d.key)),
      decision.breakGlassId,
    );
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
      if (await this.view.inSyncNow(d.key)) healed.push(d);
      else {
        this.deps.log.warn({ target: a.name, object: d.key }, 'still drifted right after the heal');
        this.retry.schedule(this.pacing.nextHealTime(this.deps.now()));
      }
    }
    for (const d of healed) this.reportedDrift.delete(d.key);
    if (healed.length > 0)
      await this.view.emit(healed.map((d) => this.driftReport('healed', d, decision.breakGlassId)));
  }

  /** Remember that a window blocked us, tell the hub once, and look again when the window may change. */
  private async block(
    intent: 'auto' | 'self-heal',
    decision: Extract<GateDecision, { allowed: false }>,
  ): Promise<void> {
    const a = this.view.assignment;
    if (this.view.state.pendingIntent !== intent) {
      this.view.state.pendingIntent = intent;
      await this.deps.store.saveTargetState(a.targetId, this.view.state);
    }
    // Told once per hold: a later hold of the same revision (another window, after a heal) is new.
    const signature = `${intent}:${a.bundleDigest}:${decision.message}`;
    if (this.blockedReported !== signature) {
      this.blockedReported = signature;
      const at = this.deps.now().toISOString();
      await this.view.emit([nothingAppliedReport(a, intent, 'Blocked', decision.message, at)]);
      this.deps.log.info({ target: a.name, intent, message: decision.message }, 'sync blocked');
    }
    if (decision.retryAt) this.retry.schedule(new Date(decision.retryAt.getTime() + 1_000));
  }

  private driftReport(state: DriftReport['state'], d: Drifted, breakGlassId?: string): Report {
    return driftReport(this.view.assignment.targetId, state, d, this.deps.now().toISOString(), breakGlassId);
  }
}
