import {
  type Assignment,
  type Bundle,
  type HealthStatus,
  type KubeObject,
  type Report,
  TRACKING_LABEL,
  TRACKING_LABEL_VALUE,
} from '@flotilla/contract';
import { driftOptionsOf } from '../sync/apply-mode.js';
import { TargetComparison } from '../drift/target-comparison.js';
import { apiVersionLookup, eventsOfReport } from '../events/cluster-events.js';
import { aggregateHealth } from '../health/target-health.js';
import { type KubeClient, idOf } from '../kube/kube-client.js';
import { sopsEncryptedRefs } from '../secrets/bundle-decryptor.js';
import { type ResourceId, type TargetState } from '../state/state-store.js';
import { prepareObject } from '../sync/prepare-object.js';
import { addDeclaredKeys, prunable, pruneHold } from '../sync/prune-plan.js';
import { keyOf, refOfId, trackedBy } from '../sync/resource-ref.js';
import { type ReconcilerDeps } from './reconciler-deps.js';
import { healthReport } from './target-reports.js';

/**
 * One target as its reconciler sees it: the assignment and bundle it runs, its state on disk, the
 * desired objects prepared from the bundle, what the cluster has of them (watch cache, or a read),
 * what a sync would change (the comparison), and its health as last told. Its reports go out here,
 * with the cluster Events they stand for.
 */
export class TargetView {
  desired: KubeObject[] = [];
  desiredByKey = new Map<string, KubeObject>();
  /** What a sync would change, as last compared: told to the hub when it changes. */
  readonly comparison = new TargetComparison();
  /** The target's health as last judged (told to the hub or not), for automatic rollback. */
  lastStatus: HealthStatus | undefined;
  private lastHealth: string | undefined;
  /** Declared objects the watch cannot see (no tracking label yet), as last read, for health. */
  private readonly unwatched = new Map<string, KubeObject>();

  constructor(
    private readonly deps: ReconcilerDeps,
    public assignment: Assignment,
    public bundle: Bundle,
    public state: TargetState,
  ) {}

  /** These objects were just applied, so they carry the tracking label: the watch sees them now. */
  watched(keys: Iterable<string>): void {
    for (const key of keys) this.unwatched.delete(key);
  }

  /** Whether the last full sync was of this assignment's bundle and revision. */
  attemptedHere(): boolean {
    const last = this.state.lastSync;
    // A new commit that renders the same bundle still gets its sync run, as in Argo CD.
    return (
      !!last && last.digest === this.assignment.bundleDigest && last.revision === this.assignment.revision
    );
  }

  /** Whether the last full sync of this bundle and revision failed (in whole or in part). */
  failedHere(): boolean {
    const outcome = this.state.lastSync?.outcome;
    return this.attemptedHere() && (outcome === 'Failed' || outcome === 'Partial');
  }

  /** The client a sync of `a` writes with: impersonating its project's ServiceAccount when so configured. */
  writer(a: Assignment): KubeClient {
    const user = this.deps.writeAs?.(a);
    if (user === undefined) return this.deps.kube;
    if (!this.deps.kube.impersonating) throw new Error('this Kubernetes client cannot impersonate');
    return this.deps.kube.impersonating(user);
  }

  /** Rebuild the prepared desired objects from the bundle (after a restart, no sync needed). */
  async prepareDesired(): Promise<void> {
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

  setDesired(objects: KubeObject[], digest: string): void {
    this.desired = objects;
    this.desiredFor = digest;
    this.desiredByKey = new Map(objects.map((o) => [keyOf(idOf(o)), o]));
    this.comparison.declared(this.desiredByKey.keys(), digest, sopsEncryptedRefs(this.bundle));
    for (const key of this.unwatched.keys()) if (!this.desiredByKey.has(key)) this.unwatched.delete(key);
  }

  async watchKinds(): Promise<void> {
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
  async liveOf(obj: KubeObject, fresh: boolean): Promise<KubeObject | undefined> {
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

  /**
   * After a run that stopped short (terminated, a failed wave): what Git declares is still the
   * whole bundle, not just what the run reached, so the comparison covers the objects it never
   * applied too — a target whose sync was cut short is not shown in sync.
   */
  async compareUnreached(reached: ReadonlyMap<string, KubeObject>): Promise<void> {
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

  compare(key: string, live: KubeObject): void {
    const desired = this.desiredByKey.get(key);
    if (!desired) return;
    const diff = this.deps.differ(desired, live, driftOptionsOf(desired, this.assignment));
    this.comparison.record(key, desired, live, diff.differences);
  }

  /**
   * Looks for what a prune would delete: objects the target applied (its inventory) that the bundle
   * no longer declares and that still carry its tracking annotation, each marked with whether a
   * sync would delete it now. Listed in the comparison as deletions. A read that fails is left out
   * (and looked at again next time): the comparison never guesses at a deletion.
   */
  async lookForLeftovers(): Promise<void> {
    const a = this.assignment;
    const declared = new Set<string>();
    addDeclaredKeys(declared, this.bundle.manifests, a.namespace);
    const found: { live: KubeObject; prune: boolean }[] = [];
    for (const id of this.state.inventory) {
      if (declared.has(keyOf(id))) continue;
      const live = await this.deps.kube.get(id).catch(() => undefined);
      if (!live || trackedBy(live) !== a.name) continue;
      const held = pruneHold({
        declaredFailures: 0,
        prune: a.syncPolicy.prune,
        declaresNothing: this.bundle.manifests.length === 0,
        allowEmpty: a.syncPolicy.allowEmpty,
      });
      found.push({ live, prune: held === null && prunable([live], []).prune.length === 1 });
    }
    this.comparison.leftoversFound(found);
  }

  /** Whether the object, read afresh from the API server, matches what is desired. */
  async inSyncNow(key: string): Promise<boolean> {
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

  /**
   * Queues reports for the hub, then tells the cluster what they say as Events (only once the queue
   * holds them: an Event never describes a report that a crash could lose). `alsoKnown` resolves
   * objects no longer declared or inventoried, such as what this sync pruned.
   */
  async emit(reports: Report[], alsoKnown: readonly ResourceId[] = []): Promise<void> {
    await this.deps.emit(reports);
    const record = this.deps.recordEvents;
    if (!record) return;
    // Later sources win: what the target declares now over what it tracked.
    const apiVersionOf = apiVersionLookup([
      ...alsoKnown,
      ...this.state.inventory,
      ...this.bundle.manifests,
      ...this.desired,
    ]);
    for (const r of reports) {
      const events = eventsOfReport(r, this.assignment.name, apiVersionOf);
      if (events.length > 0) record(events);
    }
  }

  async emitHealthIfChanged(fresh: Map<string, KubeObject>): Promise<void> {
    const report = this.healthReport(fresh);
    if (report) await this.emit([report]);
  }

  /** A health report when the target's health differs from the last one told, else null. */
  healthReport(fresh: Map<string, KubeObject>): Report | null {
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
    return healthReport(this.assignment.targetId, health, this.deps.now().toISOString());
  }
}
