import { randomUUID } from 'node:crypto';
import {
  type AnyHookPhase,
  type HookPhase,
  type KubeObject,
  type ResourceResult,
  type SyncOutcome,
  type SyncReport,
} from '@flotilla/contract';
import { idOf } from '../kube/kube-client.js';
import { type ResourceId } from '../state/state-store.js';
import { isFoundation } from './apply-order.js';
import { namespaceLimitMessage, namespaceLimitRefusals, projectRefusals } from './project-check.js';
import { policyRefusals } from './policy-check.js';
import { addDeclaredKeys } from './prune-plan.js';
import { describeRef, keyOf, refOfManifest } from './resource-ref.js';
import { sharedWithOtherTargets } from './shared-resources.js';
import { SyncAborted, SyncTerminated } from './sync-errors.js';
import { type SyncInput, type SyncResult } from './sync-input.js';
import { SyncRun } from './sync-run.js';
import { type Step, groupByWave, stepsOf } from './sync-steps.js';

export { type SyncInput, type SyncResult } from './sync-input.js';

/**
 * One sync run, in Argo CD's order: PreSync hooks, then the declared objects (and Sync hooks) wave by
 * wave — each wave applied by server-side apply, and the next one started only once every object of
 * this wave is healthy (see SyncWaits.waitHealthy), and what the target tracks and no longer declares
 * pruned inside those waves in reverse wave order (SyncRun.planPrune) — then PostSync hooks. When
 * anything fails, SyncFail hooks run instead of the rest. Never throws for a cluster error: each
 * object's and hook's outcome is in the report.
 */
export async function syncTarget(input: SyncInput): Promise<SyncResult> {
  const now = input.now ?? (() => new Date());
  const startedAt = now().toISOString();
  const run = new SyncRun(input);
  // A revision refused before the cluster is touched: failed, nothing applied, tracking as before.
  const nothingApplied = (message: string, resources: ResourceResult[]): SyncResult => ({
    report: makeReport(input, startedAt, now().toISOString(), 'Failed', message, resources),
    desired: [],
    live: run.live,
    inventory: [...input.inventory],
  });
  if (input.breakGlassId) run.messages.push(`outside sync windows under break-glass ${input.breakGlassId}`);

  let steps: Step[];
  try {
    steps = stepsOf(input.manifests);
  } catch (err) {
    // Bad input changes nothing: refuse the whole revision before touching the cluster.
    return nothingApplied((err as Error).message, []);
  }
  const refusal = await refusalBeforeApplying(input, steps);
  if (refusal) return nothingApplied(refusal.message, refusal.resources);

  // A Helm hook Argo CD has no phase for is never applied; the run says so rather than stay silent.
  if (input.trigger !== 'rollback' && !input.only)
    for (const s of steps)
      if (s.role.kind === 'hook' && s.role.notRun)
        run.messages.push(`hook not run: ${describeRef(refOfManifest(s.manifest))} (${s.role.notRun})`);

  let ended: RunEnd = { aborted: false, terminated: false };
  if (input.only) {
    // A heal re-applies drifted objects only: no hooks, no waiting (Argo CD: no hooks on selective syncs).
    for (const s of steps) if (s.role.kind === 'resource') await run.applyResource(s.manifest);
  } else {
    ended = await runPhases(run, steps);
  }

  const held = run.pruneHeldMessage();
  if (held) run.messages.push(held);
  const failed = run.failed();
  const outcome = outcomeOf(ended, failed, run.results.length);
  if (failed > 0) run.messages.push(`${failed} of ${run.results.length} object(s) failed`);
  return {
    report: makeReport(input, startedAt, now().toISOString(), outcome, run.messages.join('; '), run.results),
    desired: run.desired,
    live: run.live,
    inventory: trackedAfter(input, run),
    // A terminated run is reported as such, even when the agent began stopping meanwhile.
    interrupted: input.signal?.aborted === true && !ended.terminated,
  };
}

/**
 * Runs one phase's hooks outside a sync — PreDelete or PostDelete when a target is deleted — exactly
 * as a sync runs its hooks (waves, generateName, delete policies, waiting): each hook's result, and
 * why the phase failed when it did.
 */
export async function runHookPhase(
  input: SyncInput,
  phase: AnyHookPhase,
  hooks: readonly KubeObject[],
): Promise<{ results: ResourceResult[]; failure?: string }> {
  const run = new SyncRun(input);
  const steps = stepsOf(hooks);
  try {
    await run.runHooks(phase, steps);
    return { results: run.results };
  } catch (err) {
    return { results: run.results, failure: (err as Error).message };
  }
}

/**
 * Why the whole revision is refused before the cluster is touched: objects beyond a namespace-scoped
 * agent's reach, objects outside the target's project, or (FailOnSharedResource=true) objects another
 * target tracks. Undefined when none of these stops it.
 */
async function refusalBeforeApplying(
  input: SyncInput,
  steps: readonly Step[],
): Promise<{ message: string; resources: ResourceResult[] } | undefined> {
  const refuse = (message: string, resources: ResourceResult[] = []) => ({ message, resources });
  let beyondReach: ResourceResult[];
  try {
    beyondReach = await namespaceLimitRefusals(input.kube, input.assignment, input.manifests);
  } catch (err) {
    return refuse(
      `cannot check this agent's namespaces before applying: ${(err as Error).message}; nothing applied`,
    );
  }
  const limitMessage = namespaceLimitMessage(input.kube, beyondReach);
  if (limitMessage) return refuse(`${limitMessage}; nothing applied`, beyondReach);

  let refused: ResourceResult[];
  try {
    refused = await projectRefusals(input.kube, input.assignment, input.manifests);
  } catch (err) {
    return refuse(`cannot check the project before applying: ${(err as Error).message}; nothing applied`);
  }
  if (refused.length > 0) {
    const project = input.assignment.project?.name ?? '';
    return refuse(`${refused.length} object(s) outside project '${project}'; nothing applied`, refused);
  }

  let denied: ResourceResult[];
  try {
    denied = await policyRefusals(input.kube, input.assignment, input.manifests);
  } catch (err) {
    return refuse(
      `cannot check the admission policies before applying: ${(err as Error).message}; nothing applied`,
    );
  }
  if (denied.length > 0)
    return refuse(`${denied.length} object(s) denied by admission policies; nothing applied`, denied);

  // A heal only re-applies what this target already owns.
  if (!input.assignment.syncPolicy.failOnSharedResource || input.only) return undefined;
  let shared: ResourceResult[];
  try {
    const resources = steps.filter((s) => s.role.kind === 'resource').map((s) => s.manifest);
    shared = await sharedWithOtherTargets(input.kube, input.assignment, resources);
  } catch (err) {
    return refuse(
      `cannot check for shared objects before applying (FailOnSharedResource=true): ${(err as Error).message}; nothing applied`,
    );
  }
  if (shared.length > 0)
    return refuse(
      `${shared.length} object(s) tracked by another target (FailOnSharedResource=true); nothing applied`,
      shared,
    );
  return undefined;
}

/** How a full run ended early: stopped by a failure or the agent stopping, or terminated by a person. */
interface RunEnd {
  aborted: boolean;
  terminated: boolean;
}

/**
 * A full run's phases (see syncTarget), then the SyncFail hooks when it failed. A cluster error
 * anywhere (a wave's read-back, a hook's) ends the run like a failed step: the sync never throws for
 * the cluster, it reports what happened to each object.
 */
async function runPhases(run: SyncRun, steps: readonly Step[]): Promise<RunEnd> {
  const input = run.input;
  // As in Argo CD, a rollback re-applies an older revision's objects without running its hooks.
  const runsHooks = input.trigger !== 'rollback';
  const hooksOf = (phase: HookPhase): Step[] =>
    steps.filter((s) => runsHooks && s.role.kind === 'hook' && s.role.phases.includes(phase));
  const ended: RunEnd = { aborted: false, terminated: false };
  try {
    await applyPhases(run, steps, hooksOf);
  } catch (err) {
    ended.aborted = true;
    ended.terminated = err instanceof SyncTerminated;
    run.messages.push(
      err instanceof SyncAborted || err instanceof SyncTerminated
        ? err.message
        : `sync stopped: ${(err as Error).message}`,
    );
  }
  // Stopping the agent is not a failure of the revision, and a person who terminated the run
  // asked for nothing more to run: no SyncFail hooks for either.
  if ((ended.aborted || run.failed() > 0) && !input.signal?.aborted && !ended.terminated) {
    try {
      await run.runHooks('SyncFail', hooksOf('SyncFail'));
    } catch (err) {
      run.messages.push(
        err instanceof SyncAborted ? err.message : `SyncFail hooks: ${(err as Error).message}`,
      );
    }
  }
  return ended;
}

/** Foundation, PreSync, the waves with their Sync hooks and prunes, PruneLast, PostSync. Throws to stop. */
async function applyPhases(
  run: SyncRun,
  steps: readonly Step[],
  hooksOf: (phase: HookPhase) => Step[],
): Promise<void> {
  const resources = steps.filter((s) => s.role.kind === 'resource');
  await run.createNamespace();
  // Namespaces and CRDs first, hooks included: a PreSync Job needs its namespace, and a custom
  // resource its established CRD.
  const founded: KubeObject[] = [];
  for (const s of resources.filter((x) => isFoundation(x.manifest))) {
    const obj = await run.applyResource(s.manifest);
    if (obj) founded.push(obj);
  }
  if (founded.length > 0) await run.waitHealthy('namespaces and CRDs', founded);
  // After the foundation, so a custom kind whose CRD this sync installs is discoverable.
  const prunes = await run.planPrune(resources.map((s) => s.manifest));
  await run.runHooks('PreSync', hooksOf('PreSync'));
  const syncHooks = new Set(hooksOf('Sync'));
  const syncSteps = steps.filter(
    (s) => (s.role.kind === 'resource' && !isFoundation(s.manifest)) || syncHooks.has(s),
  );
  const waves = groupByWave(syncSteps, prunes.byWave);
  const postSync = hooksOf('PostSync');
  const waitsAfterLast = postSync.length > 0 || prunes.last.length > 0;
  for (const [i, wave] of waves.entries()) {
    const applied: KubeObject[] = [];
    let failures = 0;
    for (const s of wave.steps.filter((x) => x.role.kind === 'resource')) {
      const obj = await run.applyResource(s.manifest);
      if (obj) applied.push(obj);
      else failures++;
    }
    const isLast = i === waves.length - 1;
    if (failures > 0 && !isLast)
      throw new SyncAborted(`wave ${wave.wave}: ${failures} object(s) failed; later waves not applied`);
    await run.runHooks(
      'Sync',
      wave.steps.filter((x) => x.role.kind === 'hook'),
    );
    await run.prune(wave.prune);
    // Argo CD: the next wave (and PostSync) starts only once this wave is healthy.
    if (!isLast || waitsAfterLast) await run.waitHealthy(`wave ${wave.wave}`, applied);
  }
  // PruneLast=true: a last wave of its own, once everything else is applied and healthy.
  await run.prune(prunes.last);
  if (run.failed() === 0) await run.runHooks('PostSync', postSync);
}

/** What the target tracks after the run. */
function trackedAfter(input: SyncInput, run: SyncRun): ResourceId[] {
  const desiredKeys = new Set(run.desired.map((d) => keyOf(idOf(d))));
  const inventory: ResourceId[] = run.desired.map(idOf);
  // Objects whose manifest could not even be prepared (or were never reached) are still declared.
  // Hooks and Skip objects are declared too, but never tracked.
  addDeclaredKeys(desiredKeys, input.manifests, input.assignment.namespace);
  // What a stopped run never reached, or could not prepare, keeps being tracked as before.
  const reached = new Set(inventory.map(keyOf));
  inventory.push(...input.inventory.filter((id) => desiredKeys.has(keyOf(id)) && !reached.has(keyOf(id))));
  // Whatever was tracked and not pruned (a heal, a held or stopped prune, Prune=false, a failed
  // delete) stays tracked; only what was deleted, or is no longer this target's, is let go.
  inventory.push(
    ...input.inventory.filter((id) => !desiredKeys.has(keyOf(id)) && !run.released.has(keyOf(id))),
  );
  return inventory;
}

function outcomeOf(ended: RunEnd, failed: number, total: number): SyncOutcome {
  if (ended.terminated) return 'Terminated';
  if (ended.aborted) return 'Failed';
  if (failed === 0) return 'Succeeded';
  return failed === total ? 'Failed' : 'Partial';
}

function makeReport(
  input: SyncInput,
  startedAt: string,
  finishedAt: string,
  outcome: SyncOutcome,
  message: string,
  resources: ResourceResult[],
): SyncReport {
  return {
    type: 'sync',
    id: randomUUID(),
    targetId: input.assignment.targetId,
    at: finishedAt,
    revision: input.assignment.revision,
    bundleDigest: input.assignment.bundleDigest,
    trigger: input.trigger,
    outcome,
    startedAt,
    finishedAt,
    message,
    resources,
  };
}
