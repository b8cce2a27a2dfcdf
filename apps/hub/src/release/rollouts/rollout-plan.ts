import { assignSteps as assignStepsOf } from '@flotilla/plan';
import {
  resolveCount,
  type RolloutStep,
  type RolloutStrategy,
} from '../../desired-state/rollout-strategy.js';

/** What the planner needs to know about one target of the appset. Pure data: no I/O in this file. */
export interface PlanTarget {
  name: string;
  cluster: string;
  clusterLabels: Record<string, string>;
  /** When the cluster's agent last called the hub; null if never. */
  clusterLastSeenAt: Date | null;
  desiredRevision: string;
  bundleDigest: string;
  releasedRevision: string | null;
  releasedDigest: string | null;
  lastSyncedRevision: string | null;
  lastSyncedDigest: string | null;
  health: string;
  /** A pin holds the target at another revision: the rollout leaves it alone. */
  pinnedAt: string | null;
  /** An admission policy denies its bundle (the policy's name): never released, so skipped like a pin. */
  policyDenied?: string | null;
}

/** The rollout row's moving parts. */
export interface PlanState {
  stepIndex: number;
  stepStartedAt: Date;
  bakeStartedAt: Date | null;
  gateOpened: boolean;
  progress: RolloutProgress;
}

/** Stored as JSON on the rollout: who was released when, and who failed or was skipped, and why. */
export interface RolloutProgress {
  released: Record<string, string>;
  failed: Record<string, string>;
  skipped: Record<string, string>;
}

export type RolloutStatus = 'Progressing' | 'Paused' | 'Halted' | 'Completed' | 'Superseded';

export interface PlanResult {
  status: 'Progressing' | 'Halted' | 'Completed';
  state: PlanState;
  /** Targets to release now (their desired revision becomes what the agent is given). */
  release: string[];
  /** Why the rollout waits, or how it ended. */
  message: string;
  /** What happened in this tick, for the audit log. */
  events: { action: string; details: Record<string, unknown> }[];
}

export interface PlanOptions {
  now: Date;
  /** A cluster not seen for this long is offline. */
  offlineAfterSeconds: number;
}

export function emptyProgress(): RolloutProgress {
  return { released: {}, failed: {}, skipped: {} };
}

/** The steps with their targets (see @flotilla/plan: the plan before a merge assigns them alike). */
export function assignSteps(
  strategy: RolloutStrategy,
  targets: PlanTarget[],
): { step: RolloutStep; targets: PlanTarget[] }[] {
  return assignStepsOf(strategy.steps, targets);
}

/** Released at the revision this rollout moves: the agent has been given it. */
function isReleased(t: PlanTarget): boolean {
  return t.releasedDigest === t.bundleDigest && t.releasedRevision === t.desiredRevision;
}

/** Synced at the new revision and Healthy: what a step waits for. */
function isDone(t: PlanTarget): boolean {
  return (
    isReleased(t) &&
    t.lastSyncedRevision === t.desiredRevision &&
    t.lastSyncedDigest === t.bundleDigest &&
    t.health === 'Healthy'
  );
}

/**
 * One tick of a rollout: looks at the current step's targets, releases as many as maxUnavailable
 * allows, marks those that missed their progress deadline as failed, skips offline clusters within
 * the failure budget, bakes, and advances (possibly through several steps in one tick).
 *
 * Offline clusters are handled explicitly: a cluster not seen for `offlineAfterSeconds` is not
 * released; it counts against the step's failure budget and, within it, is skipped with its reason
 * recorded (it keeps its previous release). Beyond the budget the step waits for it until the step's
 * progress deadline, then the rollout halts.
 */
export function planRollout(
  strategy: RolloutStrategy,
  current: PlanState,
  targets: PlanTarget[],
  opts: PlanOptions,
): PlanResult {
  const steps = assignSteps(strategy, targets);
  const tick: Tick = {
    state: {
      ...current,
      progress: {
        released: { ...current.progress.released },
        failed: { ...current.progress.failed },
        skipped: { ...current.progress.skipped },
      },
    },
    release: [],
    events: [],
    opts,
  };
  for (;;) {
    const group = steps[tick.state.stepIndex];
    const outcome = group ? planStep(tick, group.step, group.targets) : completed(tick, steps.length);
    if (outcome !== 'next-step') {
      const { state, release, events } = tick;
      return { status: outcome.status, state, release, events, message: outcome.message };
    }
  }
}

/** What one tick has decided so far: the state it moves, the targets it releases, what it audits. */
interface Tick {
  state: PlanState;
  release: string[];
  events: PlanResult['events'];
  opts: PlanOptions;
}

/** How a step ends the tick (its status and why), or that the tick goes on with the next step. */
type StepOutcome = Pick<PlanResult, 'status' | 'message'> | 'next-step';

/** The current step's members, by where each stands. */
interface StepMembers {
  /** Synced at the new revision and Healthy. */
  done: PlanTarget[];
  /** Released, within the progress deadline. */
  inFlight: PlanTarget[];
  /** Not released yet, cluster online. */
  pending: PlanTarget[];
  /** Not released yet, cluster not seen for offlineAfterSeconds. */
  offline: PlanTarget[];
}

function completed(tick: Tick, stepCount: number): StepOutcome {
  const skipped = tick.state.progress.skipped;
  const names = Object.keys(skipped);
  return {
    status: 'Completed',
    message:
      `all ${stepCount} step(s) done` +
      (names.length > 0 ? `; skipped: ${names.map((n) => `${n} (${skipped[n]})`).join(', ')}` : ''),
  };
}

/** The current step: judge its members, then halt, wait (releasing what it may), bake, or move on. */
function planStep(tick: Tick, step: RolloutStep, members: PlanTarget[]): StepOutcome {
  const { state } = tick;
  const stepName = `step ${step.name}`;
  const { done, inFlight, pending, offline } = classify(tick, step, members);
  const failedHere = members.filter((t) => state.progress.failed[t.name] !== undefined);
  const budget = resolveCount(step.failureBudget, members.length, false);
  if (failedHere.length > budget) {
    return {
      status: 'Halted',
      message:
        `${stepName}: ${failedHere.length} cluster(s) failed, failure budget ${budget}: ` +
        failedHere.map((t) => `${t.cluster} (${state.progress.failed[t.name]})`).join(', '),
    };
  }
  // Offline clusters use what the failures left of the budget; within it they are skipped.
  const waitingOffline = skipOffline(tick, offline, budget - failedHere.length);

  // Release within maxUnavailable (0 = a gate a person opens with promote).
  const limit = resolveCount(step.maxUnavailable, members.length, true);
  if (limit === 0 && !state.gateOpened && pending.length > 0) {
    return {
      status: 'Progressing',
      message: `${stepName} is a manual gate: promote the rollout to release its ${pending.length} cluster(s)`,
    };
  }
  const allowed = limit === 0 ? pending.length : Math.max(0, limit - inFlight.length);
  for (const t of pending.slice(0, allowed)) {
    tick.release.push(t.name);
    state.progress.released[t.name] = tick.opts.now.toISOString();
    inFlight.push(t);
  }
  const waiting = pending.length - Math.min(pending.length, allowed);

  if (inFlight.length > 0 || waiting > 0 || waitingOffline.length > 0) {
    state.bakeStartedAt = null;
    const deadlineMs = step.progressDeadlineSeconds * 1000;
    if (waitingOffline.length > 0 && tick.opts.now.getTime() - state.stepStartedAt.getTime() > deadlineMs) {
      return {
        status: 'Halted',
        message: `${stepName}: ${offline.length} cluster(s) offline beyond the failure budget ${budget} for longer than the progress deadline: ${waitingOffline.map((t) => t.cluster).join(', ')}`,
      };
    }
    const parts = [`${stepName}: ${done.length}/${members.length} cluster(s) synced and Healthy`];
    if (inFlight.length > 0)
      parts.push(`waiting for ${inFlight.map((t) => `${t.cluster} (${t.health})`).join(', ')}`);
    if (waiting > 0) parts.push(`${waiting} more to release (maxUnavailable ${limit})`);
    if (waitingOffline.length > 0)
      parts.push(
        `${waitingOffline.length} offline beyond failure budget ${budget}: ${waitingOffline.map((t) => t.cluster).join(', ')}`,
      );
    return { status: 'Progressing', message: parts.join('; ') };
  }
  return bakeOrAdvance(tick, step, done, members.length);
}

/** What holds a target outside the rollout's reach: a pin, or an admission policy's Deny. */
function heldOutside(t: PlanTarget): { reason: string; message: string } | null {
  if (t.pinnedAt !== null) return { reason: 'pinned', message: `pinned at ${t.pinnedAt.slice(0, 12)}` };
  if (t.policyDenied)
    return { reason: 'policy-denied', message: `denied by admission policy ${t.policyDenied}` };
  return null;
}

/**
 * Sorts the step's members by where they stand. On the way it records what the tick learns: a
 * pinned target is skipped (once), and a released one past the progress deadline has failed.
 */
function classify(tick: Tick, step: RolloutStep, members: PlanTarget[]): StepMembers {
  const { state, events } = tick;
  const now = tick.opts.now.getTime();
  const deadlineMs = step.progressDeadlineSeconds * 1000;
  const out: StepMembers = { done: [], inFlight: [], pending: [], offline: [] };
  for (const t of members) {
    if (state.progress.failed[t.name] !== undefined) continue;
    const held = heldOutside(t);
    if (held) {
      if (state.progress.skipped[t.name] === undefined) {
        state.progress.skipped[t.name] = held.message;
        events.push({ action: 'rollout.target-skipped', details: { target: t.name, reason: held.reason } });
      }
      continue;
    }
    if (isDone(t)) {
      out.done.push(t);
      continue;
    }
    if (isReleased(t)) {
      const releasedAt = Date.parse(state.progress.released[t.name] ?? '') || state.stepStartedAt.getTime();
      if (now - releasedAt > deadlineMs) {
        const reason = `not synced and Healthy ${step.progressDeadlineSeconds} s after release (health ${t.health})`;
        state.progress.failed[t.name] = reason;
        events.push({
          action: 'rollout.target-failed',
          details: { target: t.name, cluster: t.cluster, reason },
        });
      } else out.inFlight.push(t);
      continue;
    }
    const seen = t.clusterLastSeenAt?.getTime();
    if (seen === undefined || now - seen > tick.opts.offlineAfterSeconds * 1000) out.offline.push(t);
    else out.pending.push(t);
  }
  return out;
}

/**
 * Skips offline clusters while `room` (what failures left of the budget) allows, counting those
 * skipped before; returns the offline ones still waited for.
 */
function skipOffline(tick: Tick, offline: PlanTarget[], room: number): PlanTarget[] {
  const { skipped } = tick.state.progress;
  const notYetSkipped = offline.filter((t) => skipped[t.name] === undefined);
  const alreadySkipped = offline.length - notYetSkipped.length;
  const canSkip = Math.max(0, room - alreadySkipped);
  for (const t of notYetSkipped.slice(0, canSkip)) {
    const since = t.clusterLastSeenAt
      ? `offline since ${t.clusterLastSeenAt.toISOString()}`
      : 'never connected';
    skipped[t.name] = since;
    tick.events.push({
      action: 'rollout.target-skipped',
      details: { target: t.name, cluster: t.cluster, reason: since },
    });
  }
  return offline.filter((t) => skipped[t.name] === undefined);
}

/**
 * Everything in the step is Healthy at the new revision (or failed/skipped within budget): bake,
 * then move to the next step. A step with no healthy cluster at the new revision (none selected,
 * all pinned or skipped) has nothing to bake.
 */
function bakeOrAdvance(tick: Tick, step: RolloutStep, done: PlanTarget[], memberCount: number): StepOutcome {
  const { state, opts } = tick;
  state.bakeStartedAt ??= opts.now;
  const bakedMs = opts.now.getTime() - state.bakeStartedAt.getTime();
  if (done.length > 0 && bakedMs < step.bakeSeconds * 1000) {
    const more = Math.ceil((step.bakeSeconds * 1000 - bakedMs) / 1000);
    return {
      status: 'Progressing',
      message: `step ${step.name}: ${done.length}/${memberCount} cluster(s) healthy, baking ${more} s more`,
    };
  }
  tick.events.push({
    action: 'rollout.step-completed',
    details: { step: step.name, index: state.stepIndex, healthy: done.map((t) => t.cluster) },
  });
  state.stepIndex += 1;
  state.stepStartedAt = opts.now;
  state.bakeStartedAt = null;
  state.gateOpened = false;
  return 'next-step';
}

/**
 * Promote: a gate step opens; any other step stops waiting — what it still holds back is released
 * now and the rollout moves to the next step.
 */
export function promoteRollout(
  strategy: RolloutStrategy,
  current: PlanState,
  targets: PlanTarget[],
  now: Date,
): { state: PlanState; release: string[]; what: 'gate-opened' | 'step-skipped' } {
  const steps = assignSteps(strategy, targets);
  const group = steps[current.stepIndex];
  const state: PlanState = {
    ...current,
    progress: { ...current.progress, released: { ...current.progress.released } },
  };
  if (
    group &&
    resolveCount(group.step.maxUnavailable, group.targets.length, true) === 0 &&
    !current.gateOpened
  ) {
    state.gateOpened = true;
    return { state, release: [], what: 'gate-opened' };
  }
  const release = (group?.targets ?? [])
    .filter((t) => !heldOutside(t) && !isReleased(t) && current.progress.failed[t.name] === undefined)
    .map((t) => t.name);
  for (const name of release) state.progress.released[name] = now.toISOString();
  state.stepIndex += 1;
  state.stepStartedAt = now;
  state.bakeStartedAt = null;
  state.gateOpened = false;
  return { state, release, what: 'step-skipped' };
}
