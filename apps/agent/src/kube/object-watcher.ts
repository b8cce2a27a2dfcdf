import {
  ADD,
  DELETE,
  ERROR,
  type Informer,
  type KubeConfig,
  type ObjectCache,
  UPDATE,
  makeInformer,
} from '@kubernetes/client-node';
import { type KubeObject } from '@flotilla/contract';
import { type Logger } from 'pino';
import { Backoff } from '../util/backoff.js';
import { type KubeClient } from './kube-client.js';

export type WatchEventType = 'added' | 'modified' | 'deleted';
export type ChangeListener = (type: WatchEventType, obj: KubeObject) => void;

/**
 * One informer (list + watch, cluster-wide) per kind the agent has applied. It only keeps a cache
 * and says "this object changed"; whether that is drift is decided elsewhere.
 */
export class ObjectWatcher {
  private readonly informers = new Map<string, Informer<KubeObject> & ObjectCache<KubeObject>>();
  private readonly listeners = new Set<ChangeListener>();
  private readonly timers = new Set<NodeJS.Timeout>();
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
    return this.informers.has(`${apiVersion}/${kind}`);
  }

  /** Starts watching a kind (once); resolves after the first list filled the cache. */
  ensure(apiVersion: string, kind: string): Promise<void> {
    const key = `${apiVersion}/${kind}`;
    let starting = this.starting.get(key);
    if (!starting) {
      // Several targets may ask for the same kind at once: one informer, one first list.
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
    const base = apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
    const informer = makeInformer<KubeObject>(this.kc, `${base}/${scope.resource}`, async () => {
      const list = await this.kube.list(apiVersion, kind);
      return {
        apiVersion,
        kind: `${kind}List`,
        metadata: { resourceVersion: list.resourceVersion },
        items: list.items,
      };
    });
    // Watch events carry the object without apiVersion/kind only in odd servers; fill them in to be sure.
    const emit = (type: WatchEventType) => (obj: KubeObject) => {
      const full = { ...obj, apiVersion: obj.apiVersion || apiVersion, kind: obj.kind || kind };
      for (const l of this.listeners) l(type, full);
    };
    informer.on(ADD, emit('added'));
    informer.on(UPDATE, emit('modified'));
    informer.on(DELETE, emit('deleted'));
    const backoff = new Backoff({ initialMs: 500, maxMs: 30_000 });
    // The informer stops for good on errors other than 410/timeouts; restart it ourselves.
    informer.on(ERROR, (err?: unknown) => {
      if (this.stopped) return;
      const delay = backoff.next();
      this.log.warn({ kind: key, err: String(err), retryInMs: delay }, 'watch failed; restarting');
      const timer = setTimeout(() => {
        this.timers.delete(timer);
        if (!this.stopped) void informer.start().then(() => backoff.reset());
      }, delay);
      this.timers.add(timer);
    });
    this.informers.set(key, informer);
    await informer.start();
  }

  /** The last state the watch saw, or undefined when the kind is not watched or the object is absent. */
  cached(apiVersion: string, kind: string, name: string, namespace?: string): KubeObject | undefined {
    return this.informers.get(`${apiVersion}/${kind}`)?.get(name, namespace);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    await Promise.all([...this.informers.values()].map((i) => i.stop()));
    this.informers.clear();
  }
}
