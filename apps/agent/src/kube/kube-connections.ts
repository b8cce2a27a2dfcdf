import { createHash } from 'node:crypto';
import { type AgentOptions } from 'node:https';
import { type Cluster, type KubeConfig } from '@kubernetes/client-node';
import { type Dispatcher } from 'undici';

/** client-node's per-request hook; `private` in its typings, a plain method at run time. */
type CreateDispatcher = (cluster: Cluster | null, agentOptions: AgentOptions) => Dispatcher | undefined;

/** How long a closing dispatcher may wait for requests still in flight before it is torn down. */
const CLOSE_GRACE_MS = 5_000;

/**
 * One keep-alive connection pool for everything the agent sends to its API server: applies, reads,
 * lists, deletes, discovery and the watches.
 *
 * Why this exists: @kubernetes/client-node 2.0.1 (with undici 7.30.1) calls
 * `KubeConfig.createDispatcher` from `applySecurityAuthentication` on EVERY request, and whenever
 * the kubeconfig carries any TLS option (CA data, a client certificate, insecure-skip-tls-verify —
 * that is, every real cluster) it builds a NEW undici Agent for that one request. Each request then
 * opens its own TCP connection (and TLS handshake) and leaves it in TIME_WAIT: a 500-object sync cost
 * over a thousand connections. client-node is not forked; instead the agent talks through a view of
 * its KubeConfig whose `createDispatcher` hands out one shared dispatcher per (server, TLS material).
 *
 * The TLS material is re-read by client-node on every request (files, exec plugins), so a change —
 * e.g. a client certificate rotated by an exec plugin — is seen on the next request: a new pool is
 * built for it and the old one is closed once its requests (a running watch, say) have finished.
 * When client-node caches its dispatchers itself, this module can go.
 */
export class KubeConnections {
  /** Use this KubeConfig for every client (API clients, informers, watches). */
  readonly kubeConfig: KubeConfig;
  private current: { key: string; dispatcher: Dispatcher } | undefined;
  private readonly closing = new Set<Promise<void>>();
  private closed = false;
  private built = 0;

  /** Does not change `source`: the agent gets a view of it that shares everything but the dispatcher. */
  constructor(source: KubeConfig) {
    const build = (source as unknown as { createDispatcher: CreateDispatcher }).createDispatcher;
    // A view rather than a copy: contexts, users, authenticators (with their token caches) stay the
    // source's own, and the source stays usable by others (tests share one) with client-node's own
    // behaviour.
    const view = Object.create(source) as KubeConfig;
    const shared: CreateDispatcher = (cluster, agentOptions) =>
      this.dispatcherFor(cluster, agentOptions, () => build.call(view, cluster, agentOptions));
    Object.defineProperty(view, 'createDispatcher', { value: shared });
    this.kubeConfig = view;
  }

  /** Dispatchers built so far: 1 unless the server or the TLS material changed. */
  get dispatchersBuilt(): number {
    return this.built;
  }

  /** Closes the pool (after the requests in flight, at most a few seconds); later requests get their own. */
  async close(): Promise<void> {
    this.closed = true;
    this.retire();
    await Promise.all([...this.closing]);
  }

  private dispatcherFor(
    cluster: Cluster | null,
    agentOptions: AgentOptions,
    build: () => Dispatcher | undefined,
  ): Dispatcher | undefined {
    // After close (a request that raced the stop): client-node's own behaviour, nothing kept.
    if (this.closed) return build();
    const options = this.kubeConfig.createDispatcherOptions(cluster, agentOptions);
    // No TLS options and no proxy: client-node uses undici's global dispatcher, which already pools.
    if (options.type === 'none') return undefined;
    const key = fingerprint(cluster?.server ?? '', options);
    if (this.current?.key === key) return this.current.dispatcher;
    const dispatcher = build();
    this.retire();
    if (dispatcher) {
      this.current = { key, dispatcher };
      this.built++;
    }
    return dispatcher;
  }

  /** Closes the current pool once its requests are done; tears it down if they take too long. */
  private retire(): void {
    const old = this.current?.dispatcher;
    this.current = undefined;
    if (!old) return;
    let timer: NodeJS.Timeout | undefined;
    const done = Promise.race([
      old.close(),
      new Promise<void>((resolve) => {
        timer = setTimeout(() => resolve(old.destroy()), CLOSE_GRACE_MS);
        timer.unref();
      }),
    ])
      .catch(() => undefined) // a pool that fails to close has nothing left to give back
      .finally(() => {
        clearTimeout(timer);
        this.closing.delete(done);
      });
    this.closing.add(done);
  }
}

/**
 * A digest of the server and the TLS/proxy options client-node would build a dispatcher from
 * (certificates and keys are Buffers, re-read per request, so equal content means equal material).
 */
function fingerprint(server: string, options: object): string {
  const text = JSON.stringify(options, function (this: Record<string, unknown>, key, value: unknown) {
    const raw = key === '' ? value : this[key];
    return Buffer.isBuffer(raw) ? raw.toString('base64') : value;
  });
  return createHash('sha256').update(server).update('\0').update(text).digest('base64');
}
