import { randomUUID } from 'node:crypto';
import {
  type Assignment,
  type DeleteHookPhase,
  type DeletionReport,
  type DeletionResult,
  type KubeObject,
  type ResourceResult,
  TRACKING_ANNOTATION,
  type TargetDeletion,
  assignmentSchema,
  resourceSyncOptionsOf,
} from '@flotilla/contract';
import { type HealthAssessor } from '../health/target-health.js';
import { type KubeClient, idOf } from '../kube/kube-client.js';
import { type DeletionProgress, type ResourceId } from '../state/state-store.js';
import { sleep } from '../util/backoff.js';
import { isFoundation, orderForPrune, syncWaveOf } from './apply-order.js';
import { type SyncRole, syncRoleOf } from './hooks.js';
import { prepareObject } from './prepare-object.js';
import { prunePropagationOf } from './prune-plan.js';
import { keyOf, refOfId } from './resource-ref.js';
import { DEFAULT_WAIT_TIMEOUT_MS } from './sync-input.js';
import { runHookPhase } from './sync-target.js';

/** Helm's way of keeping an object when its release is uninstalled; Flotilla keeps it when its target is deleted. */
export const HELM_RESOURCE_POLICY_ANNOTATION = 'helm.sh/resource-policy';

export interface DeleteTargetInput {
  kube: KubeClient;
  deletion: TargetDeletion;
  /** The manifests of the tombstone's bundle: its deletion hooks, and objects the inventory may lack. */
  manifests: readonly KubeObject[];
  /** What the agent tracks for the target. */
  inventory: readonly ResourceId[];
  health: HealthAssessor;
  /** How far an earlier attempt of this tombstone got (from the state dir). */
  progress: DeletionProgress;
  /** Persists progress once a phase is done, before the next one starts. */
  saveProgress: (progress: DeletionProgress) => Promise<void>;
  /** How long a hook may take, and a wave of deleted objects to be gone. Default 5 minutes. */
  waitTimeoutMs?: number;
  pollMs?: number;
  /** Aborts any wait (the agent is stopping): the result is then `interrupted`, not a failure. */
  signal?: AbortSignal;
  now?: () => Date;
}

export interface DeleteTargetResult {
  report: DeletionReport;
  /** What the target still tracks afterwards: what failed or was not reached. Kept objects are let go. */
  inventory: ResourceId[];
  /** The agent stopped during the run: not a failure of the deletion, tried again after the restart. */
  interrupted: boolean;
}

const DEFAULT_POLL_MS = 500;

/** Stops the deletion where it is: later steps are not taken, the report says why. */
class DeletionStopped extends Error {}

/**
 * Deletes one target's objects from the cluster as Argo CD deletes an Application with its resources
 * finalizer: PreDelete hooks of the last bundle first (a failure stops everything, nothing deleted),
 * then every object whose tracking annotation names this target — never another's, never an untracked
 * one — in reverse sync-wave order, each wave gone before the next (the target's propagation policy,
 * foreground unless set), Namespaces and CRDs last; then PostDelete hooks. Objects with Delete=false or
 * helm.sh/resource-policy: keep stay, and so does a Namespace holding one (deleting it would take them
 * along). Never throws for a cluster error: the report says what happened to each object.
 */
export async function deleteTarget(input: DeleteTargetInput): Promise<DeleteTargetResult> {
  const now = input.now ?? (() => new Date());
  const startedAt = now().toISOString();
  const run = new DeletionRun(input);
  let message: string;
  let failed = false;
  try {
    message = await run.execute();
  } catch (err) {
    failed = true;
    message = err instanceof DeletionStopped ? err.message : `deletion stopped: ${(err as Error).message}`;
  }
  const report: DeletionReport = {
    type: 'deletion',
    id: randomUUID(),
    targetId: input.deletion.targetId,
    deletionId: input.deletion.id,
    at: now().toISOString(),
    outcome: failed ? 'Failed' : 'Succeeded',
    startedAt,
    finishedAt: now().toISOString(),
    message,
    resources: run.results,
  };
  const released = run.released;
  return {
    report,
    inventory: input.inventory.filter((id) => !released.has(keyOf(id))),
    interrupted: input.signal?.aborted === true,
  };
}

class DeletionRun {
  readonly results: DeletionResult[] = [];
  /** Keys no longer this target's to track: deleted, kept on purpose, gone, or someone else's. */
  readonly released = new Set<string>();
  private readonly notes: string[] = [];
  private readonly assignment: Assignment;
  private readonly timeoutMs: number;
  private readonly pollMs: number;

  constructor(private readonly input: DeleteTargetInput) {
    const d = input.deletion;
    // The shape hooks are prepared and run with: the target's name (the tracking annotation) and namespace.
    this.assignment = assignmentSchema.parse({
      targetId: d.targetId,
      name: d.name,
      appSet: '',
      namespace: d.namespace,
      revision: '',
      bundleDigest: d.bundleDigest,
      syncPolicy: d.prunePropagationPolicy ? { prunePropagationPolicy: d.prunePropagationPolicy } : {},
    });
    this.timeoutMs = input.waitTimeoutMs ?? DEFAULT_WAIT_TIMEOUT_MS;
    this.pollMs = input.pollMs ?? DEFAULT_POLL_MS;
  }

  /** The whole deletion; returns its closing message, throws DeletionStopped where it stops. */
  async execute(): Promise<string> {
    const { progress } = this.input;
    let roles: { manifest: KubeObject; role: SyncRole }[];
    try {
      roles = this.input.manifests.map((manifest) => ({ manifest, role: syncRoleOf(manifest) }));
    } catch (err) {
      throw new DeletionStopped(`cannot read the bundle's hooks: ${(err as Error).message}; nothing deleted`);
    }
    const hooksOf = (phase: DeleteHookPhase): KubeObject[] =>
      roles.filter((r) => r.role.kind === 'hook' && r.role.phases.includes(phase)).map((r) => r.manifest);
    const owned = await this.ownedObjects(
      roles.filter((r) => r.role.kind === 'resource').map((r) => r.manifest),
    );
    const { deletable, kept } = this.split(owned);

    if (progress.preDeleteDone) {
      if (hooksOf('PreDelete').length > 0)
        this.note('PreDelete hooks succeeded in an earlier attempt: not run again');
    } else {
      await this.hooks('PreDelete', hooksOf('PreDelete'), 'nothing deleted');
      progress.preDeleteDone = true;
      await this.input.saveProgress(progress);
    }

    // A PostDelete hook needs its namespace: one this target owns goes only after those hooks ran.
    const postDelete = hooksOf('PostDelete');
    const hookNamespaces = new Set(
      postDelete.map((h) => h.metadata.namespace ?? this.input.deletion.namespace),
    );
    const afterHooks = deletable.filter(
      (o) => o.kind === 'Namespace' && o.apiVersion === 'v1' && hookNamespaces.has(o.metadata.name),
    );
    const waves = deletionWaves(deletable.filter((o) => !afterHooks.includes(o)));
    for (const [i, wave] of waves.entries()) {
      const later = waves.length - i - 1 + (afterHooks.length > 0 ? 1 : 0);
      await this.deleteWave(
        wave.label,
        wave.objects,
        `${later > 0 ? `${later} later wave(s) not deleted, ` : ''}PostDelete hooks not run`,
      );
    }

    if (!progress.postDeleteDone) {
      await this.hooks('PostDelete', postDelete, `${afterHooks.length} namespace(s) not deleted`);
      progress.postDeleteDone = true;
      await this.input.saveProgress(progress);
    }
    if (afterHooks.length > 0)
      await this.deleteWave('namespaces of PostDelete hooks', afterHooks, 'PostDelete hooks ran');

    const deleted = this.results.filter((r) => r.action === 'deleted' && !r.hookPhase).length;
    this.note(`${deleted} object(s) deleted, ${kept.length} kept`);
    return this.notes.join('; ');
  }

  private note(text: string): void {
    this.notes.push(text);
  }

  /**
   * The live objects this target owns: what it tracks and what its last bundle declares, each read
   * back and kept only when its tracking annotation names this target. A lookup that fails stops the
   * deletion before anything is touched: what cannot be confirmed is never deleted.
   */
  private async ownedObjects(resources: readonly KubeObject[]): Promise<KubeObject[]> {
    const { kube, deletion } = this.input;
    const ids = new Map<string, ResourceId>();
    for (const id of this.input.inventory) ids.set(keyOf(id), id);
    for (const m of resources) {
      try {
        const id = idOf(await prepareObject(kube, this.assignment, m));
        if (!ids.has(keyOf(id))) ids.set(keyOf(id), id);
      } catch {
        // A kind the cluster does not serve (or a refused option): never applied, nothing to delete.
      }
    }
    const owned: KubeObject[] = [];
    for (const [key, id] of ids) {
      let live: KubeObject | undefined;
      try {
        live = await kube.get(id);
      } catch (err) {
        this.results.push({ ...refOfId(id), action: 'failed', message: (err as Error).message });
        throw new DeletionStopped(`cannot read ${describe(id)}: ${(err as Error).message}; nothing deleted`);
      }
      if (!live) {
        this.released.add(key);
        continue;
      }
      const owner = live.metadata.annotations?.[TRACKING_ANNOTATION];
      if (owner === deletion.name) owned.push(live);
      else {
        this.released.add(key);
        this.results.push({
          ...refOfId(id),
          action: 'kept',
          message: owner ? `tracked by target ${owner}, not this one` : 'not tracked by this target',
        });
      }
    }
    return owned;
  }

  /** Delete=false, helm.sh/resource-policy: keep, an unreadable options annotation, and the Namespaces holding any of them, stay. */
  private split(owned: readonly KubeObject[]): { deletable: KubeObject[]; kept: KubeObject[] } {
    const kept: KubeObject[] = [];
    const reasons = new Map<KubeObject, string>();
    for (const obj of owned) {
      let why: string | undefined;
      try {
        if (!resourceSyncOptionsOf(obj).delete) why = 'Delete=false: left in place';
      } catch (err) {
        why = `not deleted: ${(err as Error).message}`;
      }
      if (obj.metadata.annotations?.[HELM_RESOURCE_POLICY_ANNOTATION]?.trim() === 'keep')
        why ??= `${HELM_RESOURCE_POLICY_ANNOTATION}: keep: left in place`;
      if (why !== undefined) reasons.set(obj, why);
    }
    const keptNamespaces = new Set(
      [...reasons.keys()].flatMap((o) => (o.metadata.namespace ? [o.metadata.namespace] : [])),
    );
    for (const obj of owned) {
      if (!reasons.has(obj) && obj.kind === 'Namespace' && obj.apiVersion === 'v1') {
        if (keptNamespaces.has(obj.metadata.name))
          reasons.set(obj, 'left in place: it holds objects kept on deletion, which would go with it');
      }
    }
    const deletable: KubeObject[] = [];
    for (const obj of owned) {
      const why = reasons.get(obj);
      if (why === undefined) {
        deletable.push(obj);
        continue;
      }
      kept.push(obj);
      this.released.add(keyOf(idOf(obj)));
      this.results.push({ ...refOfId(idOf(obj)), action: 'kept', message: why });
    }
    return { deletable, kept };
  }

  /** Runs one deletion phase's hooks as a sync runs its own; a failure stops the deletion. */
  private async hooks(
    phase: DeleteHookPhase,
    hooks: readonly KubeObject[],
    untouched: string,
  ): Promise<void> {
    if (hooks.length === 0) return;
    const { results, failure } = await runHookPhase(
      {
        kube: this.input.kube,
        assignment: this.assignment,
        manifests: hooks,
        inventory: [],
        trigger: 'manual',
        health: this.input.health,
        waitTimeoutMs: this.timeoutMs,
        pollMs: this.pollMs,
        ...(this.input.signal ? { signal: this.input.signal } : {}),
      },
      phase,
      hooks,
    );
    for (const r of results) this.results.push(hookResult(r, phase));
    if (failure !== undefined) throw new DeletionStopped(`${failure}; ${untouched}`);
  }

  /**
   * Deletes one wave (dependants first within it) and waits until every object of it is gone; a
   * failed delete, or an object still there at the deadline, stops the deletion.
   */
  private async deleteWave(label: string, objects: readonly KubeObject[], untouched: string): Promise<void> {
    const { kube } = this.input;
    const propagation = prunePropagationOf(this.assignment.syncPolicy);
    const failures: string[] = [];
    const pending: ResourceId[] = [];
    for (const obj of orderForPrune(objects)) {
      const id = idOf(obj);
      try {
        await kube.delete(id, propagation);
        pending.push(id);
      } catch (err) {
        failures.push(`${describe(id)}: ${(err as Error).message}`);
        this.results.push({ ...refOfId(id), action: 'failed', message: (err as Error).message });
      }
    }
    const deadline = Date.now() + this.timeoutMs;
    for (;;) {
      for (const id of [...pending]) {
        if (await kube.get(id)) continue;
        pending.splice(pending.indexOf(id), 1);
        this.released.add(keyOf(id));
        const message = propagation === 'Orphan' ? 'deleted; its dependents were left in place' : '';
        this.results.push({ ...refOfId(id), action: 'deleted', message });
      }
      if (pending.length === 0 || Date.now() >= deadline || this.input.signal?.aborted) break;
      await sleep(this.pollMs, this.input.signal);
    }
    for (const id of pending) {
      const why = this.input.signal?.aborted
        ? 'the agent is stopping'
        : `not gone after ${this.timeoutMs / 1000} s`;
      failures.push(`${describe(id)}: ${why}`);
      this.results.push({ ...refOfId(id), action: 'failed', message: why });
    }
    if (failures.length > 0) throw new DeletionStopped(`${label}: ${failures.join(', ')}; ${untouched}`);
  }
}

/**
 * Deletion order: the objects' sync waves in reverse (the highest first, what was created last goes
 * first), then Namespaces and CRDs in a last wave of their own — deleting them takes along whatever
 * lives in or is one of them.
 */
export function deletionWaves(objects: readonly KubeObject[]): { label: string; objects: KubeObject[] }[] {
  const waveOf = (o: KubeObject): number => {
    try {
      return syncWaveOf(o);
    } catch {
      return 0;
    }
  };
  const byWave = new Map<number, KubeObject[]>();
  for (const o of objects.filter((x) => !isFoundation(x)))
    byWave.set(waveOf(o), [...(byWave.get(waveOf(o)) ?? []), o]);
  const waves = [...byWave.entries()]
    .sort(([a], [b]) => b - a)
    .map(([wave, objs]) => ({ label: `wave ${wave}`, objects: objs }));
  const foundation = objects.filter(isFoundation);
  if (foundation.length > 0) waves.push({ label: 'namespaces and CRDs', objects: foundation });
  return waves;
}

/** A hook's result as a deletion reports it: it ran and succeeded (`applied`), or failed. */
function hookResult(r: ResourceResult, phase: DeleteHookPhase): DeletionResult {
  const result: DeletionResult = {
    ...r,
    action: r.action === 'applied' ? 'applied' : 'failed',
    hookPhase: phase,
  };
  return result;
}

function describe(id: ResourceId): string {
  return `${id.kind} ${id.namespace ? `${id.namespace}/` : ''}${id.name}`;
}
