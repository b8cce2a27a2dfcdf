import { createHash, randomUUID } from 'node:crypto';
import {
  type AnyHookPhase,
  type Assignment,
  FIELD_MANAGER,
  type HookPhase,
  type KubeObject,
  type ResourceResult,
  type SyncOutcome,
  type SyncReport,
  type SyncTrigger,
  TRACKING_ANNOTATION,
  TRACKING_LABEL,
  TRACKING_LABEL_VALUE,
  groupOf,
  resourceSyncOptionsOf,
  SyncOptionError,
} from '@flotilla/contract';
import { isDeepStrictEqual } from 'node:util';
import { keepLiveIgnoredFields, LAST_APPLIED_ANNOTATION, withLastApplied } from '@flotilla/diff';
import { type DriftDiffer, driftOptionsOf } from '../drift/drift-differ.js';
import { type HealthAssessor, type ResourceHealth } from '../health/target-health.js';
import { KubeApiError, type KubeClient, type PropagationPolicy, idOf } from '../kube/kube-client.js';
import { type ResourceId } from '../state/state-store.js';
import { sleep } from '../util/backoff.js';
import { isFoundation, orderForApply, orderForPrune, pruneWaves, syncWaveOf } from './apply-order.js';
import { type HookDeletePolicy, type SyncRole, syncRoleOf } from './hooks.js';
import { defaultDiffer } from '../lib-adapters.js';
import { namespaceLimitMessage, namespaceLimitRefusals, projectRefusals } from './project-check.js';
import { type ApplyMode, applyModeOf, WRITE_MESSAGE } from './apply-mode.js';

/** `group/kind/namespace/name` of a resource id (the same key as the contract's `refKey`). */
export function keyOf(id: ResourceId): string {
  return `${groupOf(id.apiVersion)}/${id.kind}/${id.namespace ?? ''}/${id.name}`;
}

export function refOfId(id: ResourceId): { group: string; kind: string; namespace?: string; name: string } {
  const ref: { group: string; kind: string; namespace?: string; name: string } = {
    group: groupOf(id.apiVersion),
    kind: id.kind,
    name: id.name,
  };
  if (id.namespace) ref.namespace = id.namespace;
  return ref;
}

/**
 * The object as the agent will apply it: a copy with the target's default namespace when the kind
 * is namespaced and none is given, no namespace when the kind is cluster-scoped, and the tracking
 * annotation naming the target.
 */
export async function prepareObject(
  kube: KubeClient,
  assignment: Assignment,
  manifest: KubeObject,
): Promise<KubeObject> {
  try {
    resourceSyncOptionsOf(manifest);
  } catch (err) {
    // The hub refuses these at render; an agent never applies an object whose options it cannot honour.
    if (err instanceof SyncOptionError) throw new Error(`${err.path}: ${err.message}`, { cause: err });
    throw err;
  }
  const obj = structuredClone(manifest);
  const scope = await kube.scopeOf(obj.apiVersion, obj.kind);
  if (scope.namespaced) obj.metadata.namespace ??= assignment.namespace;
  else delete obj.metadata.namespace;
  obj.metadata.annotations = { ...obj.metadata.annotations, [TRACKING_ANNOTATION]: assignment.name };
  obj.metadata.labels = { ...obj.metadata.labels, [TRACKING_LABEL]: TRACKING_LABEL_VALUE };
  // The server owns these; sending them in an apply is an error or a silent no-op.
  const meta = obj.metadata as Record<string, unknown>;
  for (const f of ['resourceVersion', 'uid', 'creationTimestamp', 'managedFields', 'generation'])
    delete meta[f];
  delete (obj as Record<string, unknown>)['status'];
  return obj;
}

export interface SyncInput {
  kube: KubeClient;
  assignment: Assignment;
  manifests: readonly KubeObject[];
  /** What the target applied before (for prune), in apply order. */
  inventory: readonly ResourceId[];
  trigger: SyncTrigger;
  /** Judges when a wave is healthy and when a hook has finished. */
  health: HealthAssessor;
  /** Self-heal: re-apply only these object keys, prune nothing, run no hooks, wait for nothing. */
  only?: ReadonlySet<string>;
  breakGlassId?: string;
  now?: () => Date;
  /** How long one wave may take to become healthy, or one hook group to finish. Default 5 minutes. */
  waitTimeoutMs?: number;
  /** How often a wave's objects or a hook are read back while waiting. Default 500 ms. */
  pollMs?: number;
  /** Aborts any wait (the agent is stopping); the sync then fails with a message saying so. */
  signal?: AbortSignal;
  /**
   * A person asked to stop this run (its abort reason says who and why): it stops at the next safe
   * point — before the next object, hook or prune, or while waiting for a wave or a hook — and is
   * reported Terminated with what it applied. No later wave, prune, PostSync or SyncFail hook runs.
   */
  terminate?: AbortSignal;
  /** How ApplyOutOfSyncOnly judges an object in sync: the agent's drift comparison. */
  differ?: DriftDiffer;
}

export interface SyncResult {
  report: SyncReport;
  /** The objects as applied (prepared), in apply order. Hooks are not part of it. */
  desired: KubeObject[];
  /** The live objects the API returned from each successful apply, by key. */
  live: Map<string, KubeObject>;
  inventory: ResourceId[];
  /**
   * The agent stopped during the run (its signal aborted): the report says how far it got, but the
   * revision did not fail, so it is not recorded as synced and is run again after the restart.
   */
  interrupted?: boolean;
}

export const DEFAULT_WAIT_TIMEOUT_MS = 300_000;
const DEFAULT_POLL_MS = 500;

interface Step {
  manifest: KubeObject;
  role: SyncRole;
  wave: number;
}

/** Stops the run: later waves and phases are not applied, nothing is pruned, SyncFail hooks run. */
class SyncAborted extends Error {}

/** A person terminated the run: it stops like SyncAborted, but runs no SyncFail hooks either. */
class SyncTerminated extends Error {}

/**
 * One sync run, in Argo CD's order: PreSync hooks, then the declared objects (and Sync hooks) wave by
 * wave — each wave applied by server-side apply, and the next one started only once every object of
 * this wave is healthy (see waitHealthy), and what the target tracks and no longer declares pruned
 * inside those waves in reverse wave order (planPrune) — then PostSync hooks. When anything fails,
 * SyncFail hooks run instead of the rest. Never throws for a cluster error: each object's and hook's outcome is in the report.
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
    steps = orderForApply(input.manifests).map((manifest) => ({
      manifest,
      role: syncRoleOf(manifest),
      wave: syncWaveOf(manifest),
    }));
  } catch (err) {
    // Bad input changes nothing: refuse the whole revision before touching the cluster.
    return nothingApplied((err as Error).message, []);
  }

  // Objects beyond a namespace-scoped agent's reach refuse the whole revision, before the cluster is touched.
  let beyondReach: ResourceResult[];
  try {
    beyondReach = await namespaceLimitRefusals(input.kube, input.assignment, input.manifests);
  } catch (err) {
    return nothingApplied(
      `cannot check this agent's namespaces before applying: ${(err as Error).message}; nothing applied`,
      [],
    );
  }
  const limitMessage = namespaceLimitMessage(input.kube, beyondReach);
  if (limitMessage) return nothingApplied(`${limitMessage}; nothing applied`, beyondReach);

  // Objects outside the target's project refuse the whole revision, before the cluster is touched.
  let refused: ResourceResult[];
  try {
    refused = await projectRefusals(input.kube, input.assignment, input.manifests);
  } catch (err) {
    const message = `cannot check the project before applying: ${(err as Error).message}; nothing applied`;
    return nothingApplied(message, []);
  }
  if (refused.length > 0) {
    const message = `${refused.length} object(s) outside project '${input.assignment.project?.name ?? ''}'; nothing applied`;
    return nothingApplied(message, refused);
  }

  const resources = steps.filter((s) => s.role.kind === 'resource');

  // FailOnSharedResource=true: an object another target tracks refuses the whole revision, before
  // the cluster is touched (a heal only re-applies what this target already owns).
  if (input.assignment.syncPolicy.failOnSharedResource && !input.only) {
    let shared: ResourceResult[];
    try {
      shared = await sharedWithOtherTargets(
        input.kube,
        input.assignment,
        resources.map((s) => s.manifest),
      );
    } catch (err) {
      const message = `cannot check for shared objects before applying (FailOnSharedResource=true): ${(err as Error).message}; nothing applied`;
      return nothingApplied(message, []);
    }
    if (shared.length > 0)
      return nothingApplied(
        `${shared.length} object(s) tracked by another target (FailOnSharedResource=true); nothing applied`,
        shared,
      );
  }
  // As in Argo CD, a rollback re-applies an older revision's objects without running its hooks.
  const runsHooks = input.trigger !== 'rollback';
  const hooksOf = (phase: HookPhase): Step[] =>
    steps.filter((s) => runsHooks && s.role.kind === 'hook' && s.role.phases.includes(phase));
  let aborted = false;
  let terminated = false;
  // A Helm hook Argo CD has no phase for is never applied; the run says so rather than stay silent.
  if (runsHooks && !input.only)
    for (const s of steps)
      if (s.role.kind === 'hook' && s.role.notRun)
        run.messages.push(`hook not run: ${describeRef(refOfManifest(s.manifest))} (${s.role.notRun})`);

  if (input.only) {
    // A heal re-applies drifted objects only: no hooks, no waiting (Argo CD: no hooks on selective syncs).
    for (const s of resources) await run.applyResource(s.manifest);
  } else {
    try {
      await run.createNamespace();
      // Namespaces and CRDs first, hooks included: a PreSync Job needs its namespace, and a custom
      // resource its established CRD.
      const foundation = resources.filter((s) => isFoundation(s.manifest));
      const founded: KubeObject[] = [];
      for (const s of foundation) {
        const obj = await run.applyResource(s.manifest);
        if (obj) founded.push(obj);
      }
      if (founded.length > 0) await run.waitHealthy('namespaces and CRDs', founded);
      // After the foundation, so a custom kind whose CRD this sync installs is discoverable.
      const prunes = await run.planPrune(resources.map((s) => s.manifest));
      await run.runHooks('PreSync', hooksOf('PreSync'));
      const syncSteps = steps.filter(
        (s) =>
          (s.role.kind === 'resource' && !isFoundation(s.manifest)) ||
          (runsHooks && s.role.kind === 'hook' && s.role.phases.includes('Sync')),
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
    } catch (err) {
      // A cluster error anywhere (a wave's read-back, a hook's) ends the run like a failed step:
      // the sync never throws for the cluster, it reports what happened to each object.
      aborted = true;
      terminated = err instanceof SyncTerminated;
      run.messages.push(
        err instanceof SyncAborted || err instanceof SyncTerminated
          ? err.message
          : `sync stopped: ${(err as Error).message}`,
      );
    }
    // Stopping the agent is not a failure of the revision, and a person who terminated the run
    // asked for nothing more to run: no SyncFail hooks for either.
    if ((aborted || run.failed() > 0) && !input.signal?.aborted && !terminated) {
      try {
        await run.runHooks('SyncFail', hooksOf('SyncFail'));
      } catch (err) {
        run.messages.push(
          err instanceof SyncAborted ? err.message : `SyncFail hooks: ${(err as Error).message}`,
        );
      }
    }
  }

  const results = run.results;
  const desired = run.desired;
  const desiredKeys = new Set(desired.map((d) => keyOf(idOf(d))));
  const inventory: ResourceId[] = desired.map(idOf);
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

  const held = run.pruneHeldMessage();
  if (held) run.messages.push(held);
  const failed = run.failed();
  const outcome: SyncOutcome = terminated
    ? 'Terminated'
    : aborted
      ? 'Failed'
      : failed === 0
        ? 'Succeeded'
        : failed === results.length
          ? 'Failed'
          : 'Partial';
  if (failed > 0) run.messages.push(`${failed} of ${results.length} object(s) failed`);
  return {
    report: makeReport(input, startedAt, now().toISOString(), outcome, run.messages.join('; '), results),
    desired,
    live: run.live,
    inventory,
    // A terminated run is reported as such, even when the agent began stopping meanwhile.
    interrupted: input.signal?.aborted === true && !terminated,
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
  const steps = orderForApply(hooks).map((manifest) => ({
    manifest,
    role: syncRoleOf(manifest),
    wave: syncWaveOf(manifest),
  }));
  try {
    await run.runHooks(phase, steps);
    return { results: run.results };
  } catch (err) {
    return { results: run.results, failure: (err as Error).message };
  }
}

interface Wave {
  wave: number;
  steps: Step[];
  /** Objects no longer declared that this wave deletes (see planPrune). */
  prune: KubeObject[];
}

/**
 * Consecutive steps with the same wave, the order inside staying apply order; with the waves prunes
 * fall in, a wave with nothing to apply included, in wave order.
 */
function groupByWave(steps: readonly Step[], prunes: ReadonlyMap<number, KubeObject[]> = new Map()): Wave[] {
  const waves: Wave[] = [];
  for (const s of steps) {
    const last = waves.at(-1);
    if (last && last.wave === s.wave) last.steps.push(s);
    else waves.push({ wave: s.wave, steps: [s], prune: [] });
  }
  for (const [wave, objects] of prunes) {
    const found = waves.find((w) => w.wave === wave);
    if (found) found.prune.push(...objects);
    else waves.push({ wave, steps: [], prune: [...objects] });
  }
  return waves.sort((a, b) => a.wave - b.wave);
}

/** The mutable state of one sync run and the cluster calls it makes. */
class SyncRun {
  readonly results: ResourceResult[] = [];
  readonly desired: KubeObject[] = [];
  readonly live = new Map<string, KubeObject>();
  readonly messages: string[] = [];
  /** Keys of tracked objects this run deleted, or found no longer this target's: no longer tracked. */
  readonly released = new Set<string>();
  /** Declared objects that could not be prepared or applied: while any, nothing is pruned. */
  private declaredFailures = 0;
  /** Leftovers a wave's prune did not delete because a declared object had failed by then. */
  private heldPrunes = 0;
  /** Declared objects planPrune could not prepare (a run may stop before applyResource reports them). */
  private unprepared = 0;
  private readonly prepared = new Map<KubeObject, Promise<KubeObject>>();
  private readonly timeoutMs: number;
  private readonly pollMs: number;
  /** Wakes a wait when the agent stops or a person terminates the run. */
  private readonly wakeSignal: AbortSignal | undefined;

  constructor(private readonly input: SyncInput) {
    this.timeoutMs = input.waitTimeoutMs ?? DEFAULT_WAIT_TIMEOUT_MS;
    this.pollMs = input.pollMs ?? DEFAULT_POLL_MS;
    const signals = [input.signal, input.terminate].filter((x): x is AbortSignal => x !== undefined);
    this.wakeSignal = signals.length > 1 ? AbortSignal.any(signals) : signals[0];
  }

  /** A safe point: throws SyncTerminated once a person asked to terminate the run. */
  checkTerminated(): void {
    const t = this.input.terminate;
    if (t?.aborted) throw new SyncTerminated(typeof t.reason === 'string' ? t.reason : 'terminated');
  }

  failed(): number {
    return this.results.filter((r) => r.action === 'failed').length;
  }

  /**
   * Prepares and applies one declared object; returns the live result, or undefined when it failed
   * (the failure is recorded). With `only`, objects outside it are prepared but not applied.
   */
  async applyResource(manifest: KubeObject): Promise<KubeObject | undefined> {
    const { kube, assignment } = this.input;
    this.checkTerminated();
    let obj: KubeObject;
    try {
      obj = await this.prepare(manifest);
    } catch (err) {
      this.declaredFailures++;
      this.results.push({ ...refOfId(idOf(manifest)), action: 'failed', message: (err as Error).message });
      return undefined;
    }
    this.desired.push(obj);
    const id = idOf(obj);
    const key = keyOf(id);
    if (this.input.only && !this.input.only.has(key)) return undefined;
    try {
      const before = await kube.get(id);
      if (before && this.skipsInSync(obj, before)) {
        this.live.set(key, before);
        this.results.push({
          ...refOfId(id),
          action: 'unchanged',
          message: 'in sync: not applied (ApplyOutOfSyncOnly=true)',
        });
        return before;
      }
      const toApply =
        before && assignment.syncPolicy.respectIgnoreDifferences && assignment.ignoreDifferences.length > 0
          ? keepLiveIgnoredFields(obj, before, assignment.ignoreDifferences)
          : obj;
      const written = await this.write(toApply, before, applyModeOf(obj, assignment.syncPolicy));
      this.live.set(key, written.after);
      const previous = trackedBy(before);
      const message = [
        written.message,
        previous && previous !== assignment.name
          ? `taken over from target ${previous}, which tracked it`
          : '',
      ]
        .filter((m) => m !== '')
        .join('; ');
      this.results.push({ ...refOfId(id), action: written.unchanged ? 'unchanged' : 'applied', message });
      return written.after;
    } catch (err) {
      this.declaredFailures++;
      this.results.push({ ...refOfId(id), action: 'failed', message: (err as Error).message });
      return undefined;
    }
  }

  /** The manifest prepared once per run: planning the prune and applying it see the same object. */
  private prepare(manifest: KubeObject): Promise<KubeObject> {
    let prepared = this.prepared.get(manifest);
    if (!prepared) {
      prepared = prepareObject(this.input.kube, this.input.assignment, manifest);
      // Awaited by applyResource; an unobserved failure here is not an error of its own.
      prepared.catch(() => undefined);
      this.prepared.set(manifest, prepared);
    }
    return prepared;
  }

  /**
   * What this run prunes, and in which wave (Argo CD): inside the Sync phase, by the pruned objects'
   * own sync-wave annotations in reverse (the highest wave is pruned in the lowest prune wave's slot,
   * and so on), and PruneLast=true ones (on the object, or the target's syncOption) after every wave
   * is applied and healthy. Nothing at all when any declared object cannot be prepared — what the
   * agent cannot confirm is no longer declared is never deleted — or when prune is held.
   */
  async planPrune(
    resources: readonly KubeObject[],
  ): Promise<{ byWave: Map<number, KubeObject[]>; last: KubeObject[] }> {
    const none = { byWave: new Map<number, KubeObject[]>(), last: [] };
    const { kube, assignment, manifests, inventory } = this.input;
    const declared = new Set<string>();
    addDeclaredKeys(declared, manifests, assignment.namespace);
    let unprepared = 0;
    for (const m of resources) {
      try {
        declared.add(keyOf(idOf(await this.prepare(m))));
      } catch {
        unprepared++;
      }
    }
    const leftovers = inventory.filter((id) => !declared.has(keyOf(id)));
    if (leftovers.length === 0) return none;
    const hold = pruneHold({
      declaredFailures: unprepared + this.declaredFailures,
      prune: assignment.syncPolicy.prune,
      declaresNothing: manifests.length === 0,
      allowEmpty: assignment.syncPolicy.allowEmpty,
    });
    if (hold === 'declared-failures') {
      this.unprepared = unprepared;
      this.heldPrunes = leftovers.length;
      return none;
    }
    if (hold === 'prune-off')
      this.messages.push(`${leftovers.length} object(s) no longer declared; prune is off, left in place`);
    if (hold === 'empty-revision')
      this.messages.push(
        `revision declares no objects: refusing to prune all ${leftovers.length} (set syncPolicy.allowEmpty to allow it)`,
      );
    if (hold) return none;
    const { owned, keep } = await ownedLeftovers(kube, assignment, leftovers, this.results);
    const kept = new Set(keep.map(keyOf));
    for (const id of leftovers) if (!kept.has(keyOf(id))) this.released.add(keyOf(id));
    const { prune: deletable, kept: stays } = prunable(owned, this.results);
    // Owned, but kept (Prune=false) or not yet deleted: still this target's until a prune deletes it.
    for (const obj of [...deletable, ...stays]) this.released.delete(keyOf(idOf(obj)));
    const pruneLastByDefault = assignment.syncPolicy.pruneLast === true;
    const inWaves = deletable.filter((o) => !(resourceSyncOptionsOf(o).pruneLast ?? pruneLastByDefault));
    return {
      byWave: pruneWaves(inWaves),
      last: deletable.filter((o) => !inWaves.includes(o)),
    };
  }

  /**
   * Deletes one wave's leftovers, dependants first, with the target's propagation policy — unless
   * a declared object has failed by now, when they stay (and stay tracked) for a later run.
   */
  async prune(objects: readonly KubeObject[]): Promise<void> {
    if (objects.length > 0) this.checkTerminated();
    if (objects.length === 0) return;
    if (this.declaredFailures > 0) {
      this.heldPrunes += objects.length;
      return;
    }
    const propagation = prunePropagationOf(this.input.assignment.syncPolicy);
    for (const obj of orderForPrune(objects)) {
      const id = idOf(obj);
      try {
        await this.input.kube.delete(id, propagation);
        this.released.add(keyOf(id));
        this.results.push({ ...refOfId(id), action: 'pruned', message: PRUNE_MESSAGE[propagation] });
      } catch (err) {
        this.results.push({ ...refOfId(id), action: 'failed', message: (err as Error).message });
      }
    }
  }

  /** The run's closing word on prunes a failure held back. */
  pruneHeldMessage(): string | undefined {
    if (this.heldPrunes === 0) return undefined;
    const pruned = this.results.some((r) => r.action === 'pruned');
    const failures = Math.max(this.declaredFailures, this.unprepared);
    return `${failures} declared object(s) failed; ${pruned ? 'the rest not' : 'nothing'} pruned this run (${this.heldPrunes} left in place)`;
  }

  /**
   * Writes one prepared object as its mode says (see apply-mode.ts). `unchanged`: the write changed
   * nothing this agent is responsible for.
   */
  private async write(
    obj: KubeObject,
    before: KubeObject | undefined,
    mode: ApplyMode,
  ): Promise<{ after: KubeObject; unchanged: boolean; message: string }> {
    const { kube } = this.input;
    const options = { validate: mode.validate };
    if (mode.write === 'replace') {
      const after = await kube.replace(obj, options);
      // A write that changes nothing is not stored, so the resourceVersion stays.
      const unchanged = before?.metadata.resourceVersion === after.metadata.resourceVersion;
      return { after, unchanged, message: unchanged ? '' : WRITE_MESSAGE.replace };
    }
    if (mode.write === 'recreate' && before) {
      await this.deleteAndWait(obj);
      return { after: await kube.apply(obj, options), unchanged: false, message: WRITE_MESSAGE.recreate };
    }
    try {
      const after = await applyAs(kube, mode, obj, before);
      return {
        after,
        unchanged: before !== undefined && wroteNothing(mode, before, after, obj),
        message: '',
      };
    } catch (err) {
      // 422 Invalid is the API refusing this change (an immutable field); anything else is not
      // a reason to delete an object.
      if (!(mode.recreateWhenRefused && before && err instanceof KubeApiError && err.status === 422))
        throw err;
      await this.deleteAndWait(obj);
      return {
        after: await applyAs(kube, mode, obj, undefined),
        unchanged: false,
        message: WRITE_MESSAGE.refused(err.message),
      };
    }
  }

  /** ApplyOutOfSyncOnly=true in a full sync, and the live object already is what Git declares. */
  private skipsInSync(obj: KubeObject, live: KubeObject): boolean {
    const { assignment, only } = this.input;
    if (!assignment.syncPolicy.applyOutOfSyncOnly || only) return false;
    const differ = this.input.differ ?? defaultDiffer;
    return differ(obj, live, driftOptionsOf(obj, assignment)).inSync;
  }

  /**
   * CreateNamespace=true: the destination namespace, with managedNamespaceMetadata, unless the bundle
   * declares it. Applied by its own field manager, so a bundle that declares the namespace later owns
   * its fields without taking these labels away, and not tracked: never pruned. Without it nothing
   * else can be applied, so a failure stops the run.
   */
  async createNamespace(): Promise<void> {
    const { kube, assignment, manifests } = this.input;
    const ns = namespaceToCreate(assignment, manifests);
    if (!ns) return;
    const ref = refOfId(idOf(ns));
    try {
      const before = await kube.get(idOf(ns));
      const after = await kube.apply(ns, { fieldManager: NAMESPACE_FIELD_MANAGER });
      const action = before && appliedNothing(before, after, ns) ? 'unchanged' : 'applied';
      this.results.push({ ...ref, action, message: before ? '' : 'created (CreateNamespace=true)' });
    } catch (err) {
      this.results.push({ ...ref, action: 'failed', message: (err as Error).message });
      throw new SyncAborted(
        `cannot create namespace ${ns.metadata.name} (CreateNamespace=true): ${(err as Error).message}`,
      );
    }
  }

  /**
   * Runs the hooks of one phase, wave by wave: each wave's hooks are created together (after
   * deleting a previous run's object under BeforeHookCreation), then awaited until each has
   * finished — Healthy is success, Degraded failure — and deleted as their policies say.
   * Throws SyncAborted when a hook fails or does not finish in time.
   */
  async runHooks(phase: AnyHookPhase, steps: readonly Step[]): Promise<void> {
    for (const wave of groupByWave(steps)) {
      const started: { obj: KubeObject; policies: HookDeletePolicy[]; notes: string[] }[] = [];
      const failures: string[] = [];
      for (const s of wave.steps) {
        if (s.role.kind !== 'hook') continue;
        this.checkTerminated();
        const policies = s.role.deletePolicies;
        let ref = refOfManifest(s.manifest);
        try {
          const obj = await prepareObject(this.input.kube, this.input.assignment, s.manifest);
          ref = refOfManifest(obj);
          const mode = applyModeOf(obj, this.input.assignment.syncPolicy);
          if (obj.metadata.name === '') {
            started.push({ policies, ...(await this.createGenerated(obj, policies, mode.validate)) });
            continue;
          }
          if (policies.includes('BeforeHookCreation')) await this.deleteAndWait(obj);
          const live = mode.write === 'client-side-apply' ? await this.input.kube.get(idOf(obj)) : undefined;
          await applyAs(this.input.kube, mode, obj, live);
          started.push({ obj, policies, notes: [] });
        } catch (err) {
          this.results.push({ ...ref, action: 'failed', hookPhase: phase, message: (err as Error).message });
          failures.push(`${describeRef(ref)}: ${(err as Error).message}`);
        }
      }
      const outcomes = await this.waitFinished(started.map((h) => h.obj));
      for (const [i, h] of started.entries()) {
        const outcome = outcomes[i] as { ok: boolean; message: string };
        const ref = refOfId(idOf(h.obj));
        let message = [...h.notes, outcome.message].filter((m) => m !== '').join('; ');
        const policy: HookDeletePolicy = outcome.ok ? 'HookSucceeded' : 'HookFailed';
        if (h.policies.includes(policy)) {
          try {
            await this.input.kube.delete(idOf(h.obj));
            message = `${message ? `${message}; ` : ''}deleted (${policy})`;
          } catch (err) {
            message = `${message ? `${message}; ` : ''}could not delete (${policy}): ${(err as Error).message}`;
          }
        }
        this.results.push({ ...ref, action: outcome.ok ? 'applied' : 'failed', hookPhase: phase, message });
        if (!outcome.ok) failures.push(`${describeRef(ref)}: ${outcome.message}`);
      }
      // The hooks started are recorded above (still running, or deleted by policy) before it stops.
      this.checkTerminated();
      if (failures.length > 0) throw new SyncAborted(`${phase} hook failed: ${failures.join('; ')}`);
    }
  }

  /**
   * Waits until every object is Healthy or Suspended (or has no health rule). A Degraded object
   * fails the wave at once; the wait is bounded by waitBudgetMs. SyncAborted either way.
   */
  async waitHealthy(what: string, objects: readonly KubeObject[]): Promise<void> {
    const pending = new Map(objects.map((o) => [keyOf(idOf(o)), o]));
    const budgetMs = waitBudgetMs(objects, this.timeoutMs);
    const deadline = Date.now() + budgetMs;
    for (;;) {
      /** Why each object still pending is not done yet, for the timeout message. */
      const last = new Map<string, string>();
      for (const [key, obj] of pending) {
        const id = idOf(obj);
        const live = await this.input.kube.get(id);
        if (!live) {
          last.set(key, `${describeRef(refOfId(id))} Missing`);
          continue;
        }
        this.live.set(key, live);
        const health = this.assess(live);
        if (!health || health.status === 'Healthy' || health.status === 'Suspended') {
          pending.delete(key);
          continue;
        }
        const said = `${describeRef(refOfId(id))} ${health.status}${health.message ? ` (${health.message})` : ''}`;
        // Degraded is the object's own verdict (a Deployment past its progress deadline, a crashing
        // Pod): waiting longer only delays the failure.
        if (health.status === 'Degraded') throw new SyncAborted(`${what} failed: ${said}`);
        last.set(key, said);
      }
      if (pending.size === 0) return;
      this.checkTerminated();
      if (Date.now() >= deadline || this.input.signal?.aborted) {
        const why = this.input.signal?.aborted
          ? 'the agent is stopping'
          : `not healthy after ${seconds(budgetMs)}`;
        throw new SyncAborted(`${what} ${why}: ${[...last.values()].join(', ')}`);
      }
      await sleep(this.pollMs, this.wakeSignal);
    }
  }

  /** Each hook's outcome, in order: finished well, failed, vanished, or still running at the deadline. */
  private async waitFinished(hooks: readonly KubeObject[]): Promise<{ ok: boolean; message: string }[]> {
    const outcomes: ({ ok: boolean; message: string } | undefined)[] = hooks.map(() => undefined);
    const deadline = Date.now() + this.timeoutMs;
    for (;;) {
      for (const [i, hook] of hooks.entries()) {
        if (outcomes[i]) continue;
        const live = await this.input.kube.get(idOf(hook));
        if (!live) {
          outcomes[i] = { ok: false, message: 'deleted before it finished' };
          continue;
        }
        const health = this.assess(live);
        // A kind with no health rule (a ConfigMap as a hook) is done once it exists.
        if (!health || health.status === 'Healthy')
          outcomes[i] = { ok: true, message: health?.message ?? '' };
        else if (health.status === 'Degraded' || health.status === 'Unknown')
          outcomes[i] = { ok: false, message: health.message || health.status };
      }
      if (outcomes.every((o) => o !== undefined)) return outcomes;
      if (Date.now() >= deadline || this.input.signal?.aborted || this.input.terminate?.aborted) {
        const why = this.input.terminate?.aborted
          ? 'still running when the sync was terminated'
          : this.input.signal?.aborted
            ? 'the agent is stopping'
            : `did not finish within ${seconds(this.timeoutMs)}`;
        return outcomes.map((o) => o ?? { ok: false, message: why });
      }
      await sleep(this.pollMs, this.wakeSignal);
    }
  }

  /**
   * Creates a hook named by generateName (POST: the server makes the name, fresh on every run) and
   * returns it under that name, so that waiting and delete policies apply to the object actually
   * created. Each run's object carries a label derived from the target and the hook's identity;
   * under BeforeHookCreation the earlier runs' objects of this hook are found by it and deleted first.
   */
  private async createGenerated(
    obj: KubeObject,
    policies: readonly HookDeletePolicy[],
    validate: boolean,
  ): Promise<{ obj: KubeObject; notes: string[] }> {
    const label = generatedHookLabel(this.input.assignment.name, obj);
    obj.metadata.labels = { ...obj.metadata.labels, [GENERATED_HOOK_LABEL]: label };
    delete (obj.metadata as Record<string, unknown>)['name'];
    const notes: string[] = [];
    if (policies.includes('BeforeHookCreation')) {
      // In the hook's own namespace only: all this looks at, and all a namespace-scoped agent may list.
      const namespace = obj.metadata.namespace;
      const earlier = await this.input.kube.list(obj.apiVersion, obj.kind, {
        labelSelector: `${GENERATED_HOOK_LABEL}=${label}`,
        ...(namespace !== undefined && { namespace }),
      });
      for (const e of earlier.items) {
        if ((e.metadata.namespace ?? '') !== (obj.metadata.namespace ?? '')) continue;
        await this.deleteAndWait(e);
        notes.push(`deleted the earlier run's ${e.metadata.name} (BeforeHookCreation)`);
      }
    }
    const created = await this.input.kube.create(obj, { validate });
    return { obj: { ...obj, metadata: { ...obj.metadata, name: created.metadata.name } }, notes };
  }

  /** Deletes a previous run's hook object, if any, and waits until it is really gone. */
  private async deleteAndWait(obj: KubeObject): Promise<void> {
    const id = idOf(obj);
    if (!(await this.input.kube.delete(id))) return;
    const deadline = Date.now() + this.timeoutMs;
    while (await this.input.kube.get(id)) {
      this.checkTerminated();
      if (Date.now() >= deadline || this.input.signal?.aborted)
        throw new Error(`the previous ${id.kind} ${id.name} was not gone within ${seconds(this.timeoutMs)}`);
      await sleep(this.pollMs, this.wakeSignal);
    }
  }

  private assess(live: KubeObject): ResourceHealth | null {
    try {
      return this.input.health.assess(live);
    } catch (err) {
      return { status: 'Unknown', message: `health check failed: ${(err as Error).message}` };
    }
  }
}

/**
 * One apply as the object's mode says: client-side from `live` (what the cluster has; undefined:
 * create) with ServerSideApply=false, else server-side (also for a hook with Replace=true: hooks are
 * applied, never replaced).
 */
export function applyAs(
  kube: KubeClient,
  mode: ApplyMode,
  obj: KubeObject,
  live: KubeObject | undefined,
  dryRun?: boolean,
): Promise<KubeObject> {
  const options = { validate: mode.validate, ...(dryRun ? { dryRun } : {}) };
  return mode.write === 'client-side-apply'
    ? kube.clientSideApply(obj, live, options)
    : kube.apply(obj, options);
}

/**
 * True when an apply changed nothing this agent is responsible for: appliedNothing for a server-side
 * apply; for a client-side one, the values at every path the new or the previous last-applied
 * configuration names (the annotation itself included), so a removal counts and a controller's
 * status write between our read and our patch does not.
 */
export function wroteNothing(
  mode: ApplyMode,
  before: KubeObject,
  after: KubeObject,
  applied: KubeObject,
): boolean {
  if (mode.write !== 'client-side-apply') return appliedNothing(before, after, applied);
  const shapes = [withLastApplied(applied), lastAppliedOf(before) ?? {}];
  return shapes.every((shape) => isDeepStrictEqual(projectOnto(before, shape), projectOnto(after, shape)));
}

/** The previous client-side apply's configuration, from the object's annotation. */
function lastAppliedOf(obj: KubeObject): unknown {
  const text = obj.metadata.annotations?.[LAST_APPLIED_ANNOTATION];
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/**
 * True when an apply changed nothing this agent is responsible for. resourceVersion cannot tell:
 * a controller writing status (or its own annotation) between our read and our apply moves it. So
 * compare only what the apply could have changed: the values at the paths the applied object sets,
 * before and after, and this manager's own managedFields entry (its field set, and its time, which
 * the server moves when the apply changes a value it owns).
 */
export function appliedNothing(before: KubeObject, after: KubeObject, applied: KubeObject): boolean {
  return (
    isDeepStrictEqual(ownEntry(before), ownEntry(after)) &&
    isDeepStrictEqual(projectOnto(before, applied), projectOnto(after, applied))
  );
}

function ownEntry(obj: KubeObject): unknown {
  const entries = (obj.metadata as { managedFields?: Record<string, unknown>[] }).managedFields ?? [];
  const own = entries.find(
    (e) => e['manager'] === FIELD_MANAGER && e['operation'] === 'Apply' && !e['subresource'],
  );
  return own ? { fieldsV1: own['fieldsV1'], time: own['time'], apiVersion: own['apiVersion'] } : undefined;
}

/**
 * The parts of `live` at the keys `shape` has, recursively through objects; a list or a scalar is
 * taken whole (list items carry server defaults, but the same ones before and after).
 */
function projectOnto(live: unknown, shape: unknown): unknown {
  if (!isRecord(shape) || !isRecord(live)) return live;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(shape)) out[key] = projectOnto(live[key], shape[key]);
  return out;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Longest a wave waits for an object with its own progress deadline (one that has none set: 2^31-1 s). */
export const MAX_WAVE_WAIT_MS = 3_600_000;
/** Time for the object's controller to notice its deadline passed and say so. */
const PROGRESS_DEADLINE_GRACE_MS = 30_000;

/**
 * How long a wave waits for its objects: the agent's wave timeout, or longer where an object has its
 * own progress deadline (a Deployment's spec.progressDeadlineSeconds, 600 s unless set), so a
 * rollout is judged by its controller's verdict (Degraded) rather than cut short; at most an hour.
 */
export function waitBudgetMs(objects: readonly KubeObject[], timeoutMs: number): number {
  let budget = timeoutMs;
  for (const o of objects) {
    const deadline = (o['spec'] as { progressDeadlineSeconds?: unknown } | undefined)
      ?.progressDeadlineSeconds;
    if (typeof deadline === 'number' && deadline > 0)
      budget = Math.max(budget, Math.min(deadline * 1000 + PROGRESS_DEADLINE_GRACE_MS, MAX_WAVE_WAIT_MS));
  }
  return budget;
}

/** Marks each object made from a generateName hook: which target's hook, in which namespace, it was. */
export const GENERATED_HOOK_LABEL = 'flotilla.dev/generated-hook';

/**
 * The label value shared by every run's object of one generateName hook: a digest (a label value
 * allows 63 characters, and a generateName ends in '-', which a label value may not).
 */
export function generatedHookLabel(target: string, obj: KubeObject): string {
  const identity = [
    target,
    groupOf(obj.apiVersion),
    obj.kind,
    obj.metadata.namespace ?? '',
    obj.metadata.generateName,
  ];
  return createHash('sha256').update(JSON.stringify(identity)).digest('hex').slice(0, 40);
}

/** A manifest's ref for a report; one named by generateName goes by its prefix until it is created. */
function refOfManifest(obj: KubeObject): ReturnType<typeof refOfId> {
  const ref = refOfId(idOf(obj));
  if (ref.name === '') ref.name = obj.metadata.generateName ?? '';
  return ref;
}

function describeRef(ref: { group: string; kind: string; namespace?: string; name: string }): string {
  return `${ref.group ? `${ref.group}/` : ''}${ref.kind} ${ref.namespace ? `${ref.namespace}/` : ''}${ref.name}`;
}

function seconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${(ms / 1000).toFixed(1)} s`;
}

/** The field manager of the namespaces CreateNamespace=true makes (not `flotilla`: see createNamespace). */
export const NAMESPACE_FIELD_MANAGER = `${FIELD_MANAGER}-namespace`;

/** The Namespace CreateNamespace=true asks for, or undefined when it is off or the bundle declares it. */
export function namespaceToCreate(
  assignment: Assignment,
  manifests: readonly KubeObject[],
): KubeObject | undefined {
  const policy = assignment.syncPolicy;
  const name = assignment.namespace;
  if (!policy.createNamespace || !name) return undefined;
  if (manifests.some((m) => m.apiVersion === 'v1' && m.kind === 'Namespace' && m.metadata.name === name))
    return undefined;
  const metadata: KubeObject['metadata'] = { name };
  const meta = policy.managedNamespaceMetadata;
  if (meta && Object.keys(meta.labels).length > 0) metadata.labels = meta.labels;
  if (meta && Object.keys(meta.annotations).length > 0) metadata.annotations = meta.annotations;
  return { apiVersion: 'v1', kind: 'Namespace', metadata };
}

/**
 * Adds every key a declared manifest answers to. An object without a namespace may be cluster-scoped
 * or take the target's namespace (only discovery tells), so both keys count as declared.
 */
export function addDeclaredKeys(
  keys: Set<string>,
  manifests: readonly KubeObject[],
  namespace: string,
): void {
  for (const m of manifests) {
    const id = idOf(m);
    keys.add(keyOf(id));
    if (!id.namespace) keys.add(keyOf({ ...id, namespace }));
  }
}

/** Why a sync may not prune in this run; null when it may. One rule for syncs and dry runs. */
export type PruneHold = 'declared-failures' | 'prune-off' | 'empty-revision';

export function pruneHold(o: {
  /** Declared objects that failed: what the agent could not confirm is never a reason to delete. */
  declaredFailures: number;
  prune: boolean;
  declaresNothing: boolean;
  allowEmpty: boolean;
}): PruneHold | null {
  if (o.declaredFailures > 0) return 'declared-failures';
  if (!o.prune) return 'prune-off';
  if (o.declaresNothing && !o.allowEmpty) return 'empty-revision';
  return null;
}

/**
 * The leftovers this target still owns (its tracking annotation): someone else's, or gone, is not
 * ours to delete. A lookup that fails is reported failed and its id kept for tracking.
 */
export async function ownedLeftovers(
  kube: KubeClient,
  assignment: Assignment,
  leftovers: readonly ResourceId[],
  results: ResourceResult[],
): Promise<{ owned: KubeObject[]; keep: ResourceId[] }> {
  const keep: ResourceId[] = [];
  const owned: KubeObject[] = [];
  for (const id of leftovers) {
    try {
      const obj = await kube.get(id);
      if (obj && trackedBy(obj) === assignment.name) owned.push(obj);
    } catch (err) {
      results.push({ ...refOfId(id), action: 'failed', message: (err as Error).message });
      keep.push(id);
    }
  }
  return { owned, keep };
}

/**
 * Splits owned leftovers into those a prune may delete and those it must keep: `Prune=false` on the
 * live object (its last applied annotations) keeps it, reported as left in place, and so does an
 * options annotation that cannot be read — an object is never deleted on a guess.
 */
export function prunable(
  owned: readonly KubeObject[],
  results: ResourceResult[],
): { prune: KubeObject[]; kept: KubeObject[] } {
  const prune: KubeObject[] = [];
  const kept: KubeObject[] = [];
  for (const obj of owned) {
    let message: string | undefined;
    try {
      if (!resourceSyncOptionsOf(obj).prune) message = 'Prune=false: left in place, no longer declared';
    } catch (err) {
      message = `not pruned: ${(err as Error).message}`;
    }
    if (message === undefined) prune.push(obj);
    else {
      kept.push(obj);
      results.push({ ...refOfId(idOf(obj)), action: 'unchanged', message });
    }
  }
  return { prune, kept };
}

/** The target whose tracking annotation a live object carries, if any. */
function trackedBy(live: KubeObject | undefined): string | undefined {
  return live?.metadata.annotations?.[TRACKING_ANNOTATION] || undefined;
}

/**
 * FailOnSharedResource: one `failed` result per declared object that already runs under another
 * target's tracking annotation (Argo CD: "already managed by application …"). A lookup that fails
 * throws: what cannot be checked is not applied.
 */
export async function sharedWithOtherTargets(
  kube: KubeClient,
  assignment: Assignment,
  manifests: readonly KubeObject[],
): Promise<ResourceResult[]> {
  const shared: ResourceResult[] = [];
  for (const m of manifests) {
    let obj: KubeObject;
    try {
      obj = await prepareObject(kube, assignment, m);
    } catch {
      // Not preparable (an unknown kind, a refused option): its apply reports why, nothing is shared.
      continue;
    }
    const owner = trackedBy(await kube.get(idOf(obj)));
    if (owner && owner !== assignment.name)
      shared.push({
        ...refOfId(idOf(obj)),
        action: 'failed',
        message: `already tracked by target ${owner} (FailOnSharedResource=true)`,
      });
  }
  return shared;
}

/** The API's propagation policy for a prune: the target's PrunePropagationPolicy, foreground unless set. */
export function prunePropagationOf(policy: Assignment['syncPolicy']): PropagationPolicy {
  const chosen = policy.prunePropagationPolicy ?? 'foreground';
  return chosen === 'orphan' ? 'Orphan' : chosen === 'background' ? 'Background' : 'Foreground';
}

/** Said on each pruned object only where its dependents do not simply go with it. */
const PRUNE_MESSAGE: Readonly<Record<PropagationPolicy, string>> = {
  Foreground: '',
  Background: '',
  Orphan: 'deleted; its dependents were left in place (PrunePropagationPolicy=orphan)',
};

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
