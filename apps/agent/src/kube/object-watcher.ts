import { type KubeConfig, Watch } from '@kubernetes/client-node';
import { type KubeObject, TRACKING_LABEL, TRACKING_LABEL_VALUE } from '@flotilla/contract';
import { liveForDrift } from '@flotilla/diff';
import { type Logger } from 'pino';
import { Backoff } from '../util/backoff.js';
import { groupVersionPath, type KubeClient } from './kube-client.js';

export type WatchEventType = 'added' | 'modified' | 'deleted';
export type ChangeListener = (type: WatchEventType, obj: KubeObject) => void;

/** Only what an agent applied: the rest of the cluster is neither listed, watched nor cached. */
const TRACKED = `${TRACKING_LABEL}=${TRACKING_LABEL_VALUE}`;

/**
 * One list + watch (cluster-wide, or per namespace for a namespace-scoped agent, of objects
 * carrying the tracking label) per kind the agent has applied. It only keeps a cache (of what drift and health read: `liveForDrift`) and says "this
 * object changed"; whether that is drift is decided elsewhere. An object whose label is taken away leaves the watch as deleted (the server says so):
 * its reader looks it up afresh.
 *
 * client-node's informer is not used: its ListWatch needs client-node's generated serializer, which
 * loads every one of its ~750 model classes into the agent (see kube-client.ts). This is the same
 * protocol: list, watch from the list's resourceVersion, resume a watch that ended from the last
 * resourceVersion seen, list again when the server says 410 Gone, and start over (with a back-off)
 * after an error.
 */
export class ObjectWatcher {
  /** Per kind, one watch cluster-wide, or one per namespace for a namespace-scoped agent. */
  private readonly kinds = new Map<string, KindWatch[]>();
  private readonly listeners = new Set<ChangeListener>();
  private readonly starting = new Map<string, Promise<void>>();
  private stopped = false;

  constructor(
    private readonly kc: KubeConfig,
    private readonly kube: KubeClient,
    private readonly log: Logger,
  ) {}

  onChange(listener: ChangeListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  isWatching(apiVersion: string, kind: string): boolean {
    return this.kinds.has(`${apiVersion}/${kind}`);
  }

  /** Starts watching a kind (once); resolves after the first list filled the cache. */
  ensure(apiVersion: string, kind: string): Promise<void> {
    const key = `${apiVersion}/${kind}`;
    let starting = this.starting.get(key);
    if (!starting) {
      // Several targets may ask for the same kind at once: one watch, one first list.
      starting = this.start(key, apiVersion, kind).catch((err: unknown) => {
        this.starting.delete(key);
        throw err;
      });
      this.starting.set(key, starting);
    }
    return starting;
  }

  private async start(key: string, apiVersion: string, kind: string): Promise<void> {
    if (this.stopped) return;
    const scope = await this.kube.scopeOf(apiVersion, kind);
    const limit = this.kube.namespaces;
    // A namespace-scoped agent can neither apply nor watch a cluster-scoped kind (see checkAgentNamespaces).
    if (limit && !scope.namespaced) return;
    const collections = limit
      ? limit.map((namespace) => ({
          path: `${groupVersionPath(apiVersion)}/namespaces/${encodeURIComponent(namespace)}/${scope.resource}`,
          namespace,
        }))
      : [{ path: `${groupVersionPath(apiVersion)}/${scope.resource}`, namespace: undefined }];
    const watches = collections.map(
      ({ path, namespace }) =>
        new KindWatch({
          path,
          apiVersion,
          kind,
          watch: new Watch(this.kc),
          list: () =>
            this.kube.list(apiVersion, kind, {
              labelSelector: TRACKED,
              ...(namespace !== undefined && { namespace }),
            }),
          emit: (type, obj) => {
            for (const l of this.listeners) l(type, obj);
          },
          log: this.log.child({ kind: key, ...(namespace !== undefined && { namespace }) }),
        }),
    );
    try {
      await Promise.all(watches.map((w) => w.start()));
    } catch (err) {
      for (const w of watches) w.stop();
      throw err;
    }
    // A stop() that came while the first list ran must not leave this watch behind.
    if (this.stopped) for (const w of watches) w.stop();
    else this.kinds.set(key, watches);
  }

  /** The last state the watch saw, or undefined when the kind is not watched or the object is absent. */
  cached(apiVersion: string, kind: string, name: string, namespace?: string): KubeObject | undefined {
    for (const w of this.kinds.get(`${apiVersion}/${kind}`) ?? []) {
      const obj = w.get(name, namespace);
      if (obj) return obj;
    }
    return undefined;
  }

  /** List+watch loops running now (one per kind, or per kind and namespace), for /metrics. */
  get watchCount(): number {
    let n = 0;
    for (const k of this.kinds.values()) n += k.length;
    return n;
  }

  /** Objects held in every kind's cache, for /metrics. */
  get cachedObjects(): number {
    let n = 0;
    for (const k of this.kinds.values()) for (const w of k) n += w.size;
    return n;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const k of this.kinds.values()) for (const w of k) w.stop();
    this.kinds.clear();
    await Promise.allSettled([...this.starting.values()]);
  }
}

interface KindWatchOptions {
  path: string;
  apiVersion: string;
  kind: string;
  watch: Watch;
  list: () => Promise<{ items: KubeObject[]; resourceVersion: string }>;
  emit: ChangeListener;
  log: Logger;
}

/** The cache and the watch of one kind. */
class KindWatch {
  private readonly cache = new Map<string, KubeObject>();
  private resourceVersion = '';
  private request: AbortController | undefined;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private readonly backoff = new Backoff({ initialMs: 500, maxMs: 30_000 });

  constructor(private readonly o: KindWatchOptions) {}

  get(name: string, namespace?: string): KubeObject | undefined {
    return this.cache.get(cacheKey(name, namespace));
  }

  get size(): number {
    return this.cache.size;
  }

  /** Lists (filling the cache) and starts the watch; rejects when the first list fails. */
  async start(): Promise<void> {
    await this.relist();
    this.watch();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    this.request?.abort();
  }

  /** A fresh list: objects gone while nobody watched are told as deleted, the rest as added/modified. */
  private async relist(): Promise<void> {
    const list = await this.o.list();
    if (this.stopped) return;
    const seen = new Set<string>();
    for (const item of list.items) {
      const obj = liveForDrift(item);
      const key = keyOf(obj);
      seen.add(key);
      const old = this.cache.get(key);
      this.cache.set(key, obj);
      if (!old) this.o.emit('added', obj);
      else if (old.metadata.resourceVersion !== obj.metadata.resourceVersion) this.o.emit('modified', obj);
    }
    for (const [key, obj] of this.cache) {
      if (seen.has(key)) continue;
      this.cache.delete(key);
      this.o.emit('deleted', obj);
    }
    this.resourceVersion = list.resourceVersion;
  }

  private watch(): void {
    if (this.stopped) return;
    let gone = false;
    const onEvent = (type: string, raw: unknown): void => {
      if (this.stopped) return;
      const obj = raw as KubeObject & { code?: number };
      if (type === 'ERROR') {
        // 410 Gone: the resourceVersion is too old to resume from; only a new list helps.
        if (obj.code === 410) gone = true;
        return;
      }
      const rv = obj.metadata?.resourceVersion;
      if (typeof rv === 'string' && rv) this.resourceVersion = rv;
      if (type === 'BOOKMARK') return;
      // Watch events carry the object without apiVersion/kind only in odd servers; fill them in to be sure.
      // Kept as drift and health read it (liveForDrift): no status-writer bookkeeping in the cache.
      const full = liveForDrift({
        ...obj,
        apiVersion: obj.apiVersion || this.o.apiVersion,
        kind: obj.kind || this.o.kind,
      });
      const key = keyOf(full);
      if (type === 'DELETED') {
        this.cache.delete(key);
        this.o.emit('deleted', full);
      } else {
        const known = this.cache.has(key);
        this.cache.set(key, full);
        this.o.emit(known ? 'modified' : 'added', full);
      }
    };
    const onDone = (err: unknown): void => {
      this.request = undefined;
      if (this.stopped) return;
      if ((err as { statusCode?: number } | undefined)?.statusCode === 410) gone = true;
      else if (err && !isTimeout(err)) {
        this.retry(err);
        return;
      }
      this.backoff.reset();
      // The server ended a quiet watch (or client-node's inactivity timeout did): resume from where
      // it was, or list again if the server said the resourceVersion is gone.
      if (gone) void this.restart();
      else this.watch();
    };
    this.o.watch
      .watch(
        this.o.path,
        { allowWatchBookmarks: true, resourceVersion: this.resourceVersion, labelSelector: TRACKED },
        onEvent,
        onDone,
      )
      .then(
        (request) => {
          if (this.stopped) request.abort();
          else this.request = request;
        },
        (err: unknown) => onDone(err ?? new Error('watch failed')),
      );
  }

  /** After an error: wait (backing off), list again and watch from there. */
  private retry(err: unknown): void {
    const delay = this.backoff.next();
    this.o.log.warn({ err: String(err), retryInMs: delay }, 'watch failed; restarting');
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.restart();
    }, delay);
  }

  private async restart(): Promise<void> {
    if (this.stopped) return;
    try {
      await this.relist();
    } catch (err) {
      this.retry(err);
      return;
    }
    this.watch();
  }
}

function cacheKey(name: string, namespace?: string): string {
  return namespace ? `${namespace}/${name}` : name;
}

function keyOf(obj: KubeObject): string {
  return cacheKey(obj.metadata.name, obj.metadata.namespace);
}

function isTimeout(err: unknown): boolean {
  return err instanceof Error && err.name === 'TimeoutError';
}
