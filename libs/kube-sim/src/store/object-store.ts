import { expired } from '../errors.js';
import { deepFreeze, type JsonObject, str } from '../json.js';

export type EventType = 'ADDED' | 'MODIFIED' | 'DELETED';

export interface StoreEvent {
  rv: number;
  type: EventType;
  /** `group/plural` of the object. */
  resource: string;
  namespace: string;
  name: string;
  /** Snapshot of the object as written (apiVersion and kind included); never mutated. */
  object: JsonObject;
  /**
   * For MODIFIED: the snapshot it replaced, so a watch with a selector knows whether the object
   * matched before (the API server's watch cache keeps the previous object for the same reason).
   */
  previous?: JsonObject;
}

export type WatchListener = (e: StoreEvent) => void;

function nameOf(o: JsonObject): { namespace: string; name: string } {
  const m = (o['metadata'] ?? {}) as JsonObject;
  return {
    namespace: typeof m['namespace'] === 'string' ? m['namespace'] : '',
    name: str(m['name'] ?? ''),
  };
}

/**
 * One cluster's objects, its global resourceVersion counter (the etcd revision) and a bounded
 * event history so that watches resume from a resourceVersion. Objects are stored as immutable
 * snapshots and handed out as they are, without copies: whoever reads one must not change it
 * (clone it first), and `put` takes ownership of the object it is given. With `freeze`, every
 * snapshot is deep-frozen, so a reader that mutates one fails loudly (the kube-sim specs use it).
 */
export class ObjectStore {
  private revision = 1;
  private readonly objects = new Map<string, Map<string, JsonObject>>();
  private history: StoreEvent[] = [];
  /** Every event with rv <= compacted has been dropped from history. */
  private compacted = 0;
  private readonly listeners = new Map<string, Set<WatchListener>>();
  private readonly anyListeners = new Set<WatchListener>();

  private readonly freeze: boolean;

  constructor(
    private readonly historyLimit = 2000,
    opts: { freeze?: boolean } = {},
  ) {
    this.freeze = opts.freeze ?? false;
  }

  get resourceVersion(): number {
    return this.revision;
  }

  get oldestResumable(): number {
    return this.compacted;
  }

  private bucket(resource: string): Map<string, JsonObject> {
    let b = this.objects.get(resource);
    if (!b) this.objects.set(resource, (b = new Map<string, JsonObject>()));
    return b;
  }

  /** The stored snapshot (read-only). */
  get(resource: string, namespace: string, name: string): JsonObject | undefined {
    return this.objects.get(resource)?.get(`${namespace}/${name}`);
  }

  /** Snapshots of one resource (optionally one namespace), sorted by namespace then name (read-only). */
  list(resource: string, namespace?: string): JsonObject[] {
    const b = this.objects.get(resource);
    if (!b) return [];
    const prefix = namespace === undefined ? undefined : `${namespace}/`;
    const keys = [...b.keys()].filter((k) => prefix === undefined || k.startsWith(prefix)).sort();
    return keys.map((k) => b.get(k)!);
  }

  /** Every object of every resource (for garbage collection and namespace cleanup). */
  *entries(): Generator<{ resource: string; object: JsonObject }> {
    for (const [resource, b] of this.objects) for (const o of b.values()) yield { resource, object: o };
  }

  count(resource: string): number {
    return this.objects.get(resource)?.size ?? 0;
  }

  /**
   * Writes an object, bumping the revision, and returns it as stored (with its new
   * resourceVersion). The store keeps `o` itself: the caller hands it over and must not touch it,
   * or anything inside it, afterwards.
   */
  put(resource: string, o: JsonObject, type: 'ADDED' | 'MODIFIED'): JsonObject {
    const rv = ++this.revision;
    (o['metadata'] as JsonObject)['resourceVersion'] = str(rv);
    if (this.freeze) deepFreeze(o);
    const { namespace, name } = nameOf(o);
    const bucket = this.bucket(resource);
    const previous = type === 'MODIFIED' ? bucket.get(`${namespace}/${name}`) : undefined;
    bucket.set(`${namespace}/${name}`, o);
    this.emit({ rv, type, resource, namespace, name, object: o, ...(previous && { previous }) });
    return o;
  }

  /** Removes an object; the DELETED event carries the deletion's resourceVersion. */
  remove(resource: string, namespace: string, name: string): JsonObject | undefined {
    const b = this.objects.get(resource);
    const old = b?.get(`${namespace}/${name}`);
    if (!b || !old) return undefined;
    b.delete(`${namespace}/${name}`);
    const rv = ++this.revision;
    // The last state shares everything but its metadata with the (immutable) stored snapshot.
    const last: JsonObject = {
      ...old,
      metadata: { ...(old['metadata'] as JsonObject), resourceVersion: str(rv) },
    };
    if (this.freeze) deepFreeze(last);
    this.emit({ rv, type: 'DELETED', resource, namespace, name, object: last });
    return last;
  }

  private emit(e: StoreEvent): void {
    this.history.push(e);
    if (this.history.length > this.historyLimit) {
      const drop = this.history.length - this.historyLimit;
      this.compacted = this.history[drop - 1]!.rv;
      this.history = this.history.slice(drop);
    }
    for (const l of this.listeners.get(e.resource) ?? []) l(e);
    for (const l of this.anyListeners) l(e);
  }

  /** Forgets history up to now: later watches from an older resourceVersion get 410 Gone. */
  compact(): void {
    this.compacted = this.revision;
    this.history = [];
  }

  /**
   * Subscribes to one resource's events after `fromRv`: history is replayed first, synchronously.
   * Throws 410 Expired when that part of history is gone.
   */
  watch(resource: string, fromRv: number, listener: WatchListener): () => void {
    if (fromRv < this.compacted) throw expired(`too old resource version: ${fromRv} (${this.compacted + 1})`);
    for (const e of this.history) if (e.rv > fromRv && e.resource === resource) listener(e);
    let set = this.listeners.get(resource);
    if (!set) this.listeners.set(resource, (set = new Set()));
    set.add(listener);
    return () => {
      set.delete(listener);
      if (set.size === 0) this.listeners.delete(resource);
    };
  }

  /** Every event of every resource, live only (controllers use it to wake up). */
  subscribe(listener: WatchListener): () => void {
    this.anyListeners.add(listener);
    return () => this.anyListeners.delete(listener);
  }
}
