import {
  type AnyHookPhase,
  type KubeObject,
  type ResourceResult,
  resourceSyncOptionsOf,
} from '@flotilla/contract';
import { keepLiveIgnoredFields } from '@flotilla/diff';
import { defaultDiffer } from '../drift/drift-differ.js';
import { KubeApiError, idOf } from '../kube/kube-client.js';
import { applyAs, appliedNothing, wroteNothing } from './apply-as.js';
import { type ApplyMode, applyModeOf, driftOptionsOf, WRITE_MESSAGE } from './apply-mode.js';
import { orderForPrune, pruneWaves } from './apply-order.js';
import { NAMESPACE_FIELD_MANAGER, namespaceToCreate } from './create-namespace.js';
import { runHooks } from './hook-runner.js';
import { prepareObject } from './prepare-object.js';
import {
  addDeclaredKeys,
  ownedLeftovers,
  prunable,
  PRUNE_MESSAGE,
  pruneHold,
  prunePropagationOf,
} from './prune-plan.js';
import { keyOf, refOfId, trackedBy } from './resource-ref.js';
import { SyncAborted } from './sync-errors.js';
import { type SyncInput } from './sync-input.js';
import { type Step } from './sync-steps.js';
import { SyncWaits } from './sync-waits.js';

/** The mutable state of one sync run and the cluster calls it makes. */
export class SyncRun {
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
  readonly waits: SyncWaits;

  constructor(readonly input: SyncInput) {
    this.waits = new SyncWaits(input);
  }

  /** A safe point: throws SyncTerminated once a person asked to terminate the run. */
  checkTerminated(): void {
    this.waits.checkTerminated();
  }

  /** Runs one phase's hooks, wave by wave (see hook-runner.ts); SyncAborted when one fails. */
  runHooks(phase: AnyHookPhase, steps: readonly Step[]): Promise<void> {
    return runHooks(this, phase, steps);
  }

  /** Waits for these objects to turn healthy (see SyncWaits.waitHealthy), keeping what it read. */
  waitHealthy(what: string, objects: readonly KubeObject[]): Promise<void> {
    return this.waits.waitHealthy(what, objects, this.live);
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
      await this.waits.deleteAndWait(obj);
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
      await this.waits.deleteAndWait(obj);
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
}
