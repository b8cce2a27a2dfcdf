import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ClusterApi } from './api/cluster-api.js';
import { type SimClock, systemClock } from './clock.js';
import { ControllerManager, type ControllerStats } from './controllers/controller-manager.js';
import { type OtherWriters } from './controllers/other-writers.js';
import { type ControllerScheduler, sharedScheduler } from './controllers/scheduler.js';
import { kubeconfigFor } from './kubeconfig.js';
import { ResourceRegistry } from './resources/resource-registry.js';
import { versionInfo } from './server/discovery.js';
import { type ApiFaults, ApiHttpServer } from './server/http-server.js';
import { ObjectStore } from './store/object-store.js';

export interface SimClusterOptions {
  name: string;
  /** Default 0: a free port. */
  port?: number;
  /** When set, `<dir>/<name>.kubeconfig` is written. */
  kubeconfigDir?: string;
  clock?: SimClock;
  /** Controller scheduler; default: one shared by every cluster in the process. */
  scheduler?: ControllerScheduler;
  /** Watch history kept for resumes (events). Default 2000. */
  historyLimit?: number;
  /**
   * Deep-freezes every stored object, so that code which mutates an object it read from the
   * simulator (instead of cloning it first) throws. For tests; off by default (it costs a walk per write).
   */
  freezeObjects?: boolean;
  /** The Kubernetes version `/version` reports (`v1.30.4`); default kube-sim's own (v1.32.0). */
  kubernetesVersion?: string;
}

export interface SimCluster {
  readonly name: string;
  /** `http://127.0.0.1:PORT` */
  readonly url: string;
  readonly kubeconfigPath?: string;
  stop(): Promise<void>;
}

/** A running simulated cluster with white-box access for tests and demos. */
export interface SimClusterHandle extends SimCluster {
  readonly port: number;
  /** The API semantics (create/get/patch… without HTTP) and its store. */
  readonly api: ClusterApi;
  /** Failure switches of the HTTP layer. */
  readonly faults: ApiFaults;
  /** Autoscaler and mutating-webhook simulations. */
  readonly writers: OtherWriters;
  /** The kubeconfig YAML for this cluster. */
  kubeconfig(): string;
  /** Ends every open watch from the server side (clients resume from their resourceVersion). */
  closeWatches(): number;
  /** Number of watch streams currently open. */
  openWatches(): number;
  /** TCP connections the API server has accepted since it started (connection reuse checks). */
  acceptedConnections(): number;
  /** Starts keeping every request's method, path and query (returns the list it fills), e.g. for RBAC checks. */
  recordRequests(): { method: string; path: string; query: string; userAgent: string; impersonate: string }[];
  /** Drops the watch history: resuming from an older resourceVersion then gets 410 Gone. */
  compactHistory(): void;
  /** Runs every controller now (e.g. after advancing a manual clock). */
  poke(): void;
  /** Controller passes so far, runs per controller (a pass runs only those with work) and time spent. */
  controllerStats(): ControllerStats;
}

export async function startSimCluster(opts: SimClusterOptions): Promise<SimClusterHandle> {
  const clock = opts.clock ?? systemClock;
  const store = new ObjectStore(opts.historyLimit ?? 2000, { freeze: opts.freezeObjects ?? false });
  const api = new ClusterApi(new ResourceRegistry(), store, clock);
  api.bootstrap();
  const controllers = new ControllerManager(api);
  const scheduler = opts.scheduler ?? sharedScheduler;
  const unsubscribe = store.subscribe((e) => {
    if (controllers.observe(e)) scheduler.wake(controllers);
  });
  const wakeAll = (): void => {
    controllers.wakeAll();
    scheduler.wake(controllers, 0);
  };
  const unclock = clock.onAdvance?.(wakeAll);
  scheduler.wake(controllers);
  const http = new ApiHttpServer(
    api,
    opts.kubernetesVersion ? versionInfo(opts.kubernetesVersion) : undefined,
  );
  const port = await http.listen(opts.port ?? 0);
  const url = `http://127.0.0.1:${port}`;
  let kubeconfigPath: string | undefined;
  if (opts.kubeconfigDir) {
    mkdirSync(opts.kubeconfigDir, { recursive: true });
    kubeconfigPath = join(opts.kubeconfigDir, `${opts.name}.kubeconfig`);
    writeFileSync(kubeconfigPath, kubeconfigFor(opts.name, url));
  }
  let stopped: Promise<void> | undefined;
  return {
    name: opts.name,
    url,
    port,
    ...(kubeconfigPath ? { kubeconfigPath } : {}),
    api,
    faults: http.faults,
    writers: controllers.writers,
    kubeconfig: () => kubeconfigFor(opts.name, url),
    closeWatches: () => http.closeWatches(),
    openWatches: () => http.openWatches,
    acceptedConnections: () => http.acceptedConnections,
    recordRequests: () => (http.requestLog ??= []),
    compactHistory: () => store.compact(),
    poke: wakeAll,
    controllerStats: () => controllers.stats(),
    stop: () => {
      stopped ??= (async () => {
        unsubscribe();
        unclock?.();
        scheduler.forget(controllers);
        await http.close();
      })();
      return stopped;
    },
  };
}
