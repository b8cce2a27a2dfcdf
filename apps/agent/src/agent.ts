import { join } from 'node:path';
import { type KubeConfig } from '@kubernetes/client-node';
import { type Assignment, type Report } from '@flotilla/contract';
import { DEFAULT_PROJECT } from '@flotilla/fleet-config';
import { type Logger, pino } from 'pino';
import { type AgentConfig, projectServiceAccount } from './config/agent-config.js';
import { AgentStartError } from './config/agent-start-error.js';
import { type DriftDiffer } from './drift/drift-differ.js';
import { EventRecorder } from './events/event-recorder.js';
import { type RuledHealthAssessor } from './health/health-rules.js';
import { type HealthAssessor } from './health/target-health.js';
import { AgentCredential } from './hub/agent-credential.js';
import { CapabilitiesReporter } from './hub/capabilities-reporter.js';
import { HubClient } from './hub/hub-client.js';
import { type KubeClient, createKubeClient } from './kube/kube-client.js';
import { KubeConnections } from './kube/kube-connections.js';
import { loadKubeConfig } from './kube/load-kube-config.js';
import { ObjectWatcher } from './kube/object-watcher.js';
import { AgentMetrics } from './metrics/agent-metrics.js';
import { StatusServer, StatusServerError, type StatusSources } from './metrics/status-server.js';
import { AssignmentPuller, type AssignmentPullerDeps } from './pull/assignment-puller.js';
import { BundleFetcher } from './pull/bundle-fetcher.js';
import { PlaintextBundles } from './reconcile/plaintext-bundles.js';
import { TargetDeletions } from './reconcile/target-deletions.js';
import { type ReconcilerDeps } from './reconcile/reconciler-deps.js';
import { TargetSet } from './reconcile/target-set.js';
import { ReportDelivery } from './reports/report-delivery.js';
import { ReportQueue } from './reports/report-queue.js';
import { AutoRollback } from './rollback/auto-rollback.js';
import { type BundleDecryptor } from './secrets/bundle-decryptor.js';
import { loadDecryptor } from './secrets/load-decryptor.js';
import { StateStore } from './state/state-store.js';
import { type GateAction, type WindowEvaluator, decideSync } from './windows/sync-gate.js';
import { defaultDiffer, defaultHealthAssessor, defaultWindowEvaluator } from './lib-adapters.js';

export { AgentStartError } from './config/agent-start-error.js';

export const AGENT_VERSION = '0.1.0';

/** Knobs for tests and the demo; production uses the defaults. */
export interface AgentOptions {
  logger?: Logger;
  /** Use this cluster connection instead of `config.kubeconfigPath` / in-cluster config. */
  kubeConfig?: KubeConfig;
  /** How long the hub may hold an assignments long-poll (the `wait` parameter). Default 30. */
  longPollSeconds?: number;
  /** Back-off between failed hub calls. Default 1 s doubling to 60 s, with jitter. */
  hubBackoff?: { initialMs: number; maxMs: number };
  /** Delay between consecutive self-heals of one target. Default 2 s doubling to 5 min. */
  selfHealBackoff?: { initialMs: number; maxMs: number };
  /** Poll interval while a sync waits for a wave's health or a hook. Default 500 ms. */
  syncPollMs?: number;
  /** How often discovery is read again for the hub (sent only when it changed). Default 5 min. */
  capabilitiesEveryMs?: number;
  differ?: DriftDiffer;
  /** Judges health instead of the built-in and hub-sent rules (which are then not used). */
  health?: HealthAssessor;
  evaluateWindows?: WindowEvaluator;
  now?: () => Date;
}

export interface Agent {
  readonly clusterName: string;
  /** Where /healthz, /readyz and /metrics are served, when `statusPort` is configured. */
  readonly statusUrl: string | undefined;
  /** Stops polling, watching and timers; waits for the step in progress. Idempotent. */
  stop(): Promise<void>;
}

const DEFAULT_HUB_BACKOFF = { initialMs: 1_000, maxMs: 60_000 };

/**
 * Starts an agent for one cluster: resumes from the state dir (so it reconciles even while the hub
 * is away), then pulls assignments, applies, watches, heals and reports until `stop()`.
 */
export async function startAgent(config: AgentConfig, options: AgentOptions = {}): Promise<Agent> {
  const log = (options.logger ?? pino({ level: config.logLevel })).child({ cluster: config.clusterName });
  const now = options.now ?? (() => new Date());
  const abort = new AbortController();
  const signal = abort.signal;
  const { store, queue } = await openStateDir(config.stateDir);
  // Hub calls are timed once the agent runs; by then the metrics below exist.
  const hub = new HubClient(config.hubUrl, AGENT_VERSION, (e, o, s) => metrics.observeHubCall(e, o, s));
  const credential = await AgentCredential.load({ config, store, hub, log, now, signal });
  const decryptor = await loadDecryptor(config);
  const cluster = connectCluster(config, options, log, now);
  const metrics = createMetrics(config, queue, cluster, () => targets.size);
  // The hub's custom rules replace the set in use whenever the assignments carry another one.
  let ruled: RuledHealthAssessor | undefined;
  const health = options.health ?? (ruled = await defaultHealthAssessor());
  const hubBackoff = options.hubBackoff ?? DEFAULT_HUB_BACKOFF;
  const delivery = new ReportDelivery({
    ...{ queue, hub, log, signal, backoff: hubBackoff },
    credential: () => credential.current,
  });
  const emit = async (reports: Report[]): Promise<void> => {
    await queue.enqueue(reports);
    metrics.observeReports(reports);
    delivery.wake();
  };
  const targets = await createTargets({
    ...{ config, options, store, decryptor, health, ruled, emit, log, now, signal },
    ...cluster,
  });
  cluster.watcher.onChange((_type, obj) => targets.notify(obj));
  for (const c of store.corrupt) log.warn({ code: c.code, path: c.path }, c.message);

  const puller = createPuller({ hub, store, credential, targets, log, now, signal }, cluster.kube, options);
  await puller.resume();
  const resyncTimer = setInterval(() => targets.resync(), config.resyncSeconds * 1000);
  /** What runs beside the loops, stopped in this order (the step in progress finishes). */
  const stopWork = async (): Promise<void> => {
    clearInterval(resyncTimer);
    await targets.stop();
    await cluster.watcher.stop();
    await cluster.connections.close();
    ruled?.close();
  };

  let loopsEnded = false;
  // Bound before any loop starts, so a taken port fails the start with nothing left running.
  const status = await startStatusServer(
    config,
    { live: () => !loopsEnded, readiness: () => readiness(credential, puller), metrics },
    stopWork,
  );
  const loops = Promise.all([puller.run(), delivery.run()]).finally(() => {
    loopsEnded = true;
  });
  log.info({ hub: config.hubUrl, stateDir: config.stateDir, status: status?.url }, 'agent started');

  const stop = async (): Promise<void> => {
    abort.abort();
    clearInterval(resyncTimer);
    await loops;
    await targets.stop();
    await targets.waitForDeletions();
    await cluster.events.stop();
    await status?.stop();
    await stopWork();
    log.info('agent stopped');
  };
  let stopping: Promise<void> | undefined;
  return { clusterName: config.clusterName, statusUrl: status?.url, stop: () => (stopping ??= stop()) };
}

/** The state dir, and the report queue inside it, ready to use. */
async function openStateDir(dir: string): Promise<{ store: StateStore; queue: ReportQueue }> {
  const store = new StateStore(dir);
  await store.init();
  const queue = new ReportQueue(store.reportsDir);
  await queue.init();
  return { store, queue };
}

/** The pull loop, with the discovery it sends the hub on the way. */
function createPuller(
  parts: Omit<AssignmentPullerDeps, 'capabilities' | 'bundles' | 'longPollSeconds' | 'backoff'>,
  kube: KubeClient,
  options: AgentOptions,
): AssignmentPuller {
  const { hub, log, signal } = parts;
  return new AssignmentPuller({
    ...parts,
    capabilities: new CapabilitiesReporter(
      () => kube.capabilities(),
      (cred, caps) => hub.reportCapabilities(cred, caps, signal),
      log,
      options.capabilitiesEveryMs,
    ),
    bundles: new BundleFetcher(parts.store, hub, signal),
    longPollSeconds: options.longPollSeconds ?? 30,
    backoff: options.hubBackoff ?? DEFAULT_HUB_BACKOFF,
  });
}

/** The cluster side: one connection pool, the API client, the watches and the Event writer. */
interface Cluster {
  connections: KubeConnections;
  kube: KubeClient;
  watcher: ObjectWatcher;
  events: EventRecorder;
}

function connectCluster(config: AgentConfig, options: AgentOptions, log: Logger, now: () => Date): Cluster {
  // One keep-alive pool for every API request and watch (client-node alone opens one per request).
  const connections = new KubeConnections(options.kubeConfig ?? loadKubeConfig(config));
  const kc = connections.kubeConfig;
  const kube = createKubeClient(kc, config.namespaces ? { namespaces: config.namespaces } : {});
  const watcher = new ObjectWatcher(kc, kube, log);
  const events = new EventRecorder(kube, config.clusterName, log, { now });
  return { connections, kube, watcher, events };
}

/** The agent's metrics; the gauges read their sources at scrape time. */
function createMetrics(
  config: AgentConfig,
  queue: ReportQueue,
  cluster: Cluster,
  targetCount: () => number,
): AgentMetrics {
  return new AgentMetrics(
    {
      queuedBatches: () => queue.pendingBatches,
      setAsideFiles: () => queue.setAsideFiles,
      droppedBatches: () => queue.dropped,
      watches: () => cluster.watcher.watchCount,
      cachedObjects: () => cluster.watcher.cachedObjects,
      targets: targetCount,
      events: () => cluster.events.counts,
    },
    { processMetrics: config.statusPort !== undefined },
  );
}

/**
 * Ready once it reconciles: a credential and a set of assignments. The hub being away is shown but
 * does not make it unready: the agent keeps the cluster converged without it.
 */
function readiness(
  credential: AgentCredential,
  puller: AssignmentPuller,
): ReturnType<StatusSources['readiness']> {
  return {
    checks: {
      credential: credential.current ? 'ok' : 'no credential yet (registering with the bootstrap token)',
      assignments: puller.assignmentsKnown ? 'ok' : 'waiting for the first assignments from the hub',
    },
    hub: puller.hubProblem ? `last call failed: ${puller.hubProblem}` : 'ok',
  };
}

interface TargetParts extends Cluster {
  config: AgentConfig;
  options: AgentOptions;
  store: StateStore;
  decryptor: BundleDecryptor;
  health: HealthAssessor;
  ruled: RuledHealthAssessor | undefined;
  events: EventRecorder;
  emit: (reports: Report[]) => Promise<void>;
  log: Logger;
  now: () => Date;
  signal: AbortSignal;
}

/** The target set, with what each target's reconciler, deletion and rollback works with. */
async function createTargets(parts: TargetParts): Promise<TargetSet> {
  const { config, options, kube, store, decryptor, health, emit, log, now, signal } = parts;
  const plaintext = new PlaintextBundles(decryptor, emit, log, now);
  // Automatic rollback keeps its per-target memory beside the rest of the state (see rollback/).
  const rollback = new AutoRollback(
    join(config.stateDir, 'rollback'),
    async (a, digest) => {
      const stored = await store.loadBundle(digest);
      return stored ? plaintext.of(a, stored) : undefined;
    },
    log,
  );
  await rollback.init();
  const evaluate = options.evaluateWindows ?? defaultWindowEvaluator;
  const impersonateNamespace = config.impersonateNamespace;
  const syncWait = {
    timeoutMs: (config.waveTimeoutSeconds ?? 300) * 1000,
    pollMs: options.syncPollMs ?? 500,
  };
  const reconciler: ReconcilerDeps = {
    kube,
    live: parts.watcher,
    store,
    differ: options.differ ?? defaultDiffer,
    health,
    emit,
    log,
    now,
    gate: (a: Assignment, action: GateAction, at: Date) =>
      decideSync(a, config.clusterName, action, at, evaluate),
    healBackoff: options.selfHealBackoff ?? { initialMs: 2_000, maxMs: 300_000 },
    rollback,
    recordEvents: (e) => parts.events.record(e),
    syncWait,
    ...(impersonateNamespace !== undefined && {
      writeAs: (a: Assignment) =>
        projectServiceAccount(impersonateNamespace, a.project?.name ?? DEFAULT_PROJECT),
    }),
  };
  const deletions = new TargetDeletions({ kube, store, decryptor, health, emit, log, now, syncWait, signal });
  return new TargetSet({ reconciler, rollback, plaintext, deletions, ruled: parts.ruled, log });
}

/**
 * The status port, when one is configured. A port that cannot be bound fails the start, after
 * `stopWork` has stopped what was already running.
 */
async function startStatusServer(
  config: AgentConfig,
  sources: StatusSources,
  stopWork: () => Promise<void>,
): Promise<StatusServer | undefined> {
  if (config.statusPort === undefined) return undefined;
  try {
    return await StatusServer.start(config.statusHost ?? '0.0.0.0', config.statusPort, sources);
  } catch (err) {
    await stopWork();
    if (err instanceof StatusServerError) throw new AgentStartError(err.message, err.path);
    throw err;
  }
}
