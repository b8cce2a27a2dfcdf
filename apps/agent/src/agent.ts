import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import {
  type Assignment,
  type AssignmentsResponse,
  type Bundle,
  type HealthRule,
  type Report,
  type TargetDeletion,
} from '@flotilla/contract';
import { bundleDigest } from '@flotilla/manifests';
import { DEFAULT_PROJECT } from '@flotilla/fleet-config';
import { type Logger, pino } from 'pino';
import { type AgentConfig, projectServiceAccount } from './config/agent-config.js';
import { type DriftDiffer } from './drift/drift-differ.js';
import { type HealthAssessor } from './health/target-health.js';
import { type RuledHealthAssessor } from './health/health-rules.js';
import { HubClient, HubError } from './hub/hub-client.js';
import { pollSecondsBeforeRotation, rotationDue } from './hub/credential-rotation.js';
import { createKubeClient } from './kube/kube-client.js';
import { CapabilitiesReporter } from './hub/capabilities-reporter.js';
import { KubeConnections } from './kube/kube-connections.js';
import { ObjectWatcher } from './kube/object-watcher.js';
import { TargetReconciler } from './reconcile/target-reconciler.js';
import { AutoRollback } from './rollback/auto-rollback.js';
import { ReportQueue, type SetAside } from './reports/report-queue.js';
import { BundleDecryptError, BundleDecryptor } from './secrets/bundle-decryptor.js';
import { StateStore } from './state/state-store.js';
import { deleteTarget } from './sync/delete-target.js';
import { Backoff, sleep } from './util/backoff.js';
import { EventRecorder } from './events/event-recorder.js';
import { AgentMetrics } from './metrics/agent-metrics.js';
import { StatusServer, StatusServerError } from './metrics/status-server.js';
import { type GateAction, type WindowEvaluator, decideSync } from './windows/sync-gate.js';
import { defaultDiffer, defaultHealthAssessor, defaultWindowEvaluator } from './lib-adapters.js';

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

export class AgentStartError extends Error {
  readonly code = 'AGENT_START_FAILED';
  constructor(
    message: string,
    readonly path: string,
  ) {
    super(message);
    this.name = 'AgentStartError';
  }
}

/**
 * Starts an agent for one cluster: resumes from the state dir (so it reconciles even while the hub
 * is away), then pulls assignments, applies, watches, heals and reports until `stop()`.
 */
export async function startAgent(config: AgentConfig, options: AgentOptions = {}): Promise<Agent> {
  const log = (options.logger ?? pino({ level: config.logLevel })).child({ cluster: config.clusterName });
  const now = options.now ?? (() => new Date());
  const store = new StateStore(config.stateDir);
  await store.init();
  const queue = new ReportQueue(store.reportsDir);
  await queue.init();

  if (!(await store.loadCredential()) && !config.bootstrapToken) {
    // Nothing to resume and no way to register: say so now rather than retry forever.
    throw new AgentStartError(
      `no agent credential in ${config.stateDir} and FLOTILLA_BOOTSTRAP_TOKEN is not set: ask an admin for a bootstrap token for cluster ${config.clusterName}`,
      'FLOTILLA_BOOTSTRAP_TOKEN',
    );
  }
  const decryptor = await createDecryptor(config);
  // One keep-alive pool for every API request and watch (client-node alone opens one per request).
  const connections = new KubeConnections(options.kubeConfig ?? loadKubeConfig(config));
  const kc = connections.kubeConfig;
  const kube = createKubeClient(kc, config.namespaces ? { namespaces: config.namespaces } : {});
  const impersonateNamespace = config.impersonateNamespace;
  const watcher = new ObjectWatcher(kc, kube, log);
  const events = new EventRecorder(kube, config.clusterName, log, { now });
  const reconcilers = new Map<string, TargetReconciler>();
  const metrics = new AgentMetrics(
    {
      queuedBatches: () => queue.pendingBatches,
      setAsideFiles: () => queue.setAsideFiles,
      droppedBatches: () => queue.dropped,
      watches: () => watcher.watchCount,
      cachedObjects: () => watcher.cachedObjects,
      targets: () => reconcilers.size,
      events: () => events.counts,
    },
    { processMetrics: config.statusPort !== undefined },
  );
  const hub = new HubClient(config.hubUrl, AGENT_VERSION, (endpoint, outcome, seconds) =>
    metrics.observeHubCall(endpoint, outcome, seconds),
  );
  const differ = options.differ ?? defaultDiffer;
  // The hub's custom rules replace the set in use whenever the assignments carry another one.
  let ruled: RuledHealthAssessor | undefined;
  let health: HealthAssessor;
  if (options.health) health = options.health;
  else health = ruled = await defaultHealthAssessor();
  const evaluate = options.evaluateWindows ?? defaultWindowEvaluator;
  const abort = new AbortController();
  const capabilities = new CapabilitiesReporter(
    () => kube.capabilities(),
    (cred, caps) => hub.reportCapabilities(cred, caps, abort.signal),
    log,
    options.capabilitiesEveryMs,
  );
  let credential = (await store.loadCredential())?.credential;
  let etag: string | undefined;
  let wakeDelivery: (() => void) | undefined;

  const emit = async (reports: Report[]): Promise<void> => {
    await queue.enqueue(reports);
    metrics.observeReports(reports);
    wakeDelivery?.();
  };
  // Automatic rollback keeps its per-target memory beside the rest of the state (see rollback/).
  const rollback = new AutoRollback(
    join(config.stateDir, 'rollback'),
    async (a, digest) => {
      const stored = await store.loadBundle(digest);
      return stored ? plaintextBundle(a, stored) : undefined;
    },
    log,
  );
  await rollback.init();
  const deps = {
    kube,
    live: watcher,
    store,
    differ,
    health,
    emit,
    log,
    now,
    gate: (a: Assignment, action: GateAction, at: Date) =>
      decideSync(a, config.clusterName, action, at, evaluate),
    healBackoff: options.selfHealBackoff ?? { initialMs: 2_000, maxMs: 300_000 },
    rollback,
    recordEvents: (e: Parameters<EventRecorder['record']>[0]) => events.record(e),
    syncWait: { timeoutMs: (config.waveTimeoutSeconds ?? 300) * 1000, pollMs: options.syncPollMs ?? 500 },
    ...(impersonateNamespace !== undefined && {
      writeAs: (a: Assignment) =>
        projectServiceAccount(impersonateNamespace, a.project?.name ?? DEFAULT_PROJECT),
    }),
  };

  watcher.onChange((_type, obj) => {
    for (const r of reconcilers.values()) r.notify(obj);
  });

  for (const c of store.corrupt) log.warn({ code: c.code, path: c.path }, c.message);

  /** Targets whose current bundle could not be decrypted, reported once per bundle. */
  const decryptFailures = new Set<string>();

  /** The bundle in plaintext, or undefined (reported) when its secrets cannot be decrypted here. */
  const plaintextBundle = async (a: Assignment, bundle: Bundle): Promise<Bundle | undefined> => {
    try {
      return await decryptor.plaintext(bundle);
    } catch (err) {
      if (!(err instanceof BundleDecryptError)) throw err;
      const key = `${a.targetId}@${bundle.digest}`;
      if (!decryptFailures.has(key)) {
        decryptFailures.add(key);
        log.error({ target: a.name, err: err.message }, 'bundle not applied: cannot decrypt its secrets');
        const at = now().toISOString();
        await emit([
          {
            type: 'sync',
            id: randomUUID(),
            targetId: a.targetId,
            at,
            revision: a.revision,
            bundleDigest: a.bundleDigest,
            trigger: 'auto',
            outcome: 'Failed',
            startedAt: at,
            finishedAt: at,
            message: err.message,
            resources: [],
          },
        ]);
      }
      return undefined;
    }
  };

  /** Deletions under way, by tombstone id: each runs beside the pull loop (it may wait for minutes). */
  const deleting = new Map<string, Promise<void>>();

  /**
   * Carries out one tombstone: the target's reconciler is already stopped. Its report goes out once
   * it ends (not when the agent stopped it half-way: the next start resumes it from its progress).
   */
  const runDeletion = async (d: TargetDeletion, bundle: Bundle): Promise<void> => {
    const progress = await store.loadDeletionProgress(d.id);
    if (progress.finished) return;
    const state = await store.loadTargetState(d.targetId);
    let manifests: Bundle['manifests'];
    try {
      manifests = (await decryptor.plaintext(bundle)).manifests;
    } catch (err) {
      if (!(err instanceof BundleDecryptError)) throw err;
      // Its hooks could not run as written: nothing is touched, and the hub hears why.
      const at = now().toISOString();
      await emit([
        {
          type: 'deletion',
          id: randomUUID(),
          targetId: d.targetId,
          deletionId: d.id,
          at,
          outcome: 'Failed',
          startedAt: at,
          finishedAt: at,
          message: `cannot decrypt the bundle ${d.bundleDigest}: ${err.message}; nothing deleted`,
          resources: [],
        },
      ]);
      await store.saveDeletionProgress({ ...progress, finished: true });
      return;
    }
    log.info({ target: d.name, deletionId: d.id }, 'deleting the target from the cluster');
    const result = await deleteTarget({
      // As the syncs that made the objects wrote: the tombstone names no project.
      kube: state.writesAs !== undefined && kube.impersonating ? kube.impersonating(state.writesAs) : kube,
      deletion: d,
      manifests,
      inventory: state.inventory,
      health,
      progress,
      saveProgress: (p) => store.saveDeletionProgress(p),
      waitTimeoutMs: deps.syncWait.timeoutMs,
      pollMs: deps.syncWait.pollMs,
      signal: abort.signal,
      now,
    });
    await store.saveTargetState(d.targetId, { ...state, inventory: result.inventory });
    if (result.interrupted) return;
    // Queued on disk before it is marked finished: a crash in between runs it again (every step it
    // finished is skipped or finds nothing left), never leaves the hub waiting for a lost report.
    await emit([result.report]);
    await store.saveDeletionProgress({ ...progress, finished: true });
    log.info({ target: d.name, deletionId: d.id, outcome: result.report.outcome }, result.report.message);
  };

  /**
   * Tombstones: each target named is stopped and deleted once. A tombstone the hub no longer sends
   * (done, failed, or withdrawn) is forgotten; nothing else is ever deleted here.
   */
  const applyDeletions = async (deletions: TargetDeletion[], bundles: Map<string, Bundle>): Promise<void> => {
    for (const d of deletions) {
      const running = reconcilers.get(d.targetId);
      if (running) {
        reconcilers.delete(d.targetId);
        await running.stop();
      }
      const bundle = bundles.get(d.bundleDigest);
      if (!bundle || deleting.has(d.id)) continue;
      const task = runDeletion(d, bundle)
        .catch((err: unknown) => {
          log.error({ target: d.name, deletionId: d.id, err: (err as Error).message }, 'deletion failed');
        })
        .finally(() => deleting.delete(d.id));
      deleting.set(d.id, task);
    }
    const wanted = new Set(deletions.map((d) => d.id));
    for (const id of await store.listDeletionIds())
      if (!wanted.has(id) && !deleting.has(id)) await store.forgetDeletion(id);
  };

  /**
   * Judge with these health rules from now on; when they changed, every running target is judged
   * again (a target whose rule arrived after its sync is no longer counted by the old verdict).
   */
  const useHealthRules = async (rules: readonly HealthRule[]): Promise<void> => {
    if (!ruled || !(await ruled.setRules(rules))) return;
    log.info({ rules: rules.map((r) => r.key) }, 'health rules updated');
    for (const r of reconcilers.values()) r.reassessHealth();
  };

  /** Bring the running reconcilers in line with an assignment set whose bundles are all at hand. */
  const applyAssignments = async (
    assignments: Assignment[],
    bundles: Map<string, Bundle>,
    deletions: TargetDeletion[] = [],
  ): Promise<void> => {
    const seen = new Set<string>();
    // A target being deleted is never synced, whatever else the answer says.
    const doomed = new Set(deletions.map((d) => d.targetId));
    for (const a of assignments) {
      if (doomed.has(a.targetId)) continue;
      const stored = bundles.get(a.bundleDigest);
      if (!stored) continue;
      seen.add(a.targetId);
      // A bundle whose secrets cannot be decrypted leaves the target on its last good revision.
      const plaintext = await plaintextBundle(a, stored);
      if (!plaintext) continue;
      // A revision this agent rolled back from stays replaced by the healthy one until the hub moves on.
      const run = await rollback.effective(a, plaintext);
      const existing = reconcilers.get(a.targetId);
      if (existing) existing.update(run.assignment, run.bundle);
      else reconcilers.set(a.targetId, await TargetReconciler.start(deps, run.assignment, run.bundle));
    }
    // A target the hub no longer assigns is left as it is in the cluster (orphaned), never deleted:
    // an empty answer from a confused hub must not wipe a cluster.
    for (const [id, r] of reconcilers) {
      if (!seen.has(id) && !assignments.some((a) => a.targetId === id)) {
        reconcilers.delete(id);
        await r.stop();
        log.info({ targetId: id }, 'target no longer assigned; its objects are left in place');
      }
    }
    // Only a tombstone — the hub's explicit, audited request — deletes anything.
    await applyDeletions(deletions, bundles);
  };

  /** Set once the agent works from a set of assignments, from its disk or from the hub (readiness). */
  let assignmentsKnown = false;
  /** The last hub call's failure, shown by /readyz (informational: the agent works on without the hub). */
  let hubProblem: string | undefined;

  // Resume from disk before the hub answers.
  const cached = await store.loadAssignments();
  if (cached) {
    etag = cached.etag;
    const bundles = new Map<string, Bundle>();
    const deletions = cached.deletions ?? [];
    for (const digest of [...cached.assignments, ...deletions].map((a) => a.bundleDigest)) {
      const b = await store.loadBundle(digest);
      if (b) bundles.set(digest, b);
      else etag = undefined; // fetch the whole set again so the missing bundle is re-fetched
    }
    // The rules kept with them: the agent judges as the hub last said while the hub is away.
    await useHealthRules(cached.healthRules);
    await applyAssignments(cached.assignments, bundles, deletions);
    assignmentsKnown = true;
    log.info({ targets: reconcilers.size, etag: cached.etag }, 'resumed from the state dir');
  }

  /**
   * Set when the hub said, in a typed answer, that the credential will never work again. The old one
   * stays on disk and in use until a registration replaces it: a bootstrap token that no longer
   * works must not leave the agent with nothing.
   */
  let credentialGone = false;

  const ensureCredential = async (): Promise<string> => {
    if (credential && !(credentialGone && config.bootstrapToken)) return credential;
    if (!config.bootstrapToken) {
      throw new AgentStartError(
        `no agent credential in ${config.stateDir} and FLOTILLA_BOOTSTRAP_TOKEN is not set: ask an admin for a bootstrap token for cluster ${config.clusterName}`,
        'FLOTILLA_BOOTSTRAP_TOKEN',
      );
    }
    let reg;
    try {
      reg = await hub.register(config.clusterName, config.bootstrapToken, abort.signal);
    } catch (err) {
      // Back to the stored credential for the next try: the hub may yet take it (a restored backup).
      credentialGone = false;
      throw err;
    }
    await store.saveCredential({
      clusterName: reg.clusterName,
      clusterId: reg.clusterId,
      credential: reg.credential,
      expiresAt: reg.expiresAt,
      issuedAt: now().toISOString(),
    });
    log.info({ clusterId: reg.clusterId }, 'registered with the hub');
    credential = reg.credential;
    credentialGone = false;
    return credential;
  };

  /**
   * Trades the credential for a new one when a third of its life is left. The new one is stored
   * (atomically: a crash leaves the old or the new file, never half) before it is used; if the agent
   * dies in between, the old one still works for the hub's grace period.
   */
  const rotateIfDue = async (cred: string): Promise<string> => {
    const stored = await store.loadCredential();
    if (!stored || stored.credential !== cred || !rotationDue(stored, now())) return cred;
    const next = await hub.rotate(cred, abort.signal);
    await store.saveCredential({
      clusterName: next.clusterName,
      clusterId: next.clusterId,
      credential: next.credential,
      expiresAt: next.expiresAt,
      issuedAt: now().toISOString(),
    });
    credential = next.credential;
    log.info({ expiresAt: next.expiresAt }, 'rotated the agent credential');
    return next.credential;
  };

  const fetchBundles = async (cred: string, response: AssignmentsResponse): Promise<Map<string, Bundle>> => {
    const bundles = new Map<string, Bundle>();
    const failures: string[] = [];
    const digests = [
      ...new Set([...response.assignments, ...(response.deletions ?? [])].map((a) => a.bundleDigest)),
    ];
    const missing: string[] = [];
    for (const digest of digests) {
      const stored = await store.loadBundle(digest);
      if (stored) bundles.set(digest, stored);
      else missing.push(digest);
    }
    if (missing.length > 0) {
      // A commit usually changes every bundle at once: all of them in one request (chunked by the hub's
      // cap), not one round trip each.
      const fetched = await hub.bundles(cred, missing, abort.signal);
      const wanted = new Set(missing);
      for (const bundle of fetched.bundles) {
        if (!wanted.delete(bundle.digest)) continue; // not asked for (or twice): ignored
        const actual = bundleDigest(bundle.manifests);
        if (actual !== bundle.digest) {
          failures.push(`bundle ${bundle.digest}: content hashes to ${actual}; refused`);
          continue;
        }
        await store.saveBundle(bundle);
        bundles.set(bundle.digest, bundle);
      }
      for (const digest of wanted) {
        failures.push(`bundle ${digest}: the hub did not send it (no longer assigned to this cluster?)`);
      }
    }
    if (failures.length > 0) {
      // Apply what verified, keep the old state for the rest, and retry the set after a back-off.
      // What will run is saved first (under the previous ETag, so the next poll fetches the whole
      // set again): a restart while the hub is away resumes there, never at an older revision.
      const previous = await store.loadAssignments();
      const before = new Map(previous?.assignments.map((a) => [a.targetId, a]));
      await store.saveAssignments({
        ...response,
        etag: previous?.etag ?? '',
        assignments: response.assignments.flatMap((a) => {
          if (bundles.has(a.bundleDigest)) return [a];
          const old = before.get(a.targetId);
          return old ? [old] : [];
        }),
      });
      await applyAssignments(response.assignments, bundles, response.deletions);
      throw new HubError('HUB_BAD_RESPONSE', 'bundles', failures.join('; '));
    }
    return bundles;
  };

  const pullLoop = async (): Promise<void> => {
    const backoff = new Backoff(options.hubBackoff ?? { initialMs: 1_000, maxMs: 60_000 });
    while (!abort.signal.aborted) {
      try {
        const cred = await rotateIfDue(await ensureCredential());
        await capabilities.reportIfDue(cred);
        const wait = pollSecondsBeforeRotation(
          await store.loadCredential(),
          options.longPollSeconds ?? 30,
          now(),
        );
        const poll = await hub.assignments(cred, etag, wait, abort.signal);
        if (poll.changed) {
          // Before any sync of the new set: its waves wait on objects as the new rules judge them.
          await useHealthRules(poll.response.healthRules);
          const bundles = await fetchBundles(cred, poll.response);
          await store.saveAssignments(poll.response);
          await applyAssignments(poll.response.assignments, bundles, poll.response.deletions);
          etag = poll.response.etag;
          log.debug({ etag, targets: poll.response.assignments.length }, 'assignments updated');
        }
        assignmentsKnown = true;
        hubProblem = undefined;
        backoff.reset();
      } catch (err) {
        if (abort.signal.aborted) break;
        if (err instanceof HubError && err.code === 'HUB_CREDENTIAL_GONE') {
          // Only the hub's typed answer means the credential is gone; a bare 401/403 (a proxy, a
          // hub mid-restart) is retried below with the same credential.
          credentialGone = true;
          log.error(
            { code: err.apiCode, path: err.path },
            config.bootstrapToken
              ? `${err.message}; registering again with the bootstrap token`
              : `${err.message}; set FLOTILLA_BOOTSTRAP_TOKEN to a new bootstrap token for cluster ${config.clusterName}`,
          );
        }
        hubProblem = err instanceof HubError ? err.code : 'error';
        const delay = backoff.next();
        const e = err as Error & { code?: string; path?: string };
        log.warn({ code: e.code, path: e.path, retryInMs: delay }, e.message);
        await sleep(delay, abort.signal);
      }
    }
  };

  const waitForWork = (ms: number): Promise<void> =>
    new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        wakeDelivery = undefined;
        abort.signal.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      wakeDelivery = done;
      abort.signal.addEventListener('abort', done, { once: true });
    });

  const deliveryLoop = async (): Promise<void> => {
    const backoff = new Backoff(options.hubBackoff ?? { initialMs: 1_000, maxMs: 60_000 });
    let isolating = false;
    while (!abort.signal.aborted) {
      if (queue.pendingBatches === 0 || !credential) {
        // Woken by a new report; the timeout catches a credential that arrived without one.
        await waitForWork(1_000);
        continue;
      }
      const cred = credential;
      const post = async (reports: Report[]) => (await hub.postReports(cred, reports, abort.signal)).refused;
      try {
        const { delivered, setAside } = await queue.deliverReporting(post, { onePerPost: isolating });
        logSetAside(setAside);
        if (delivered > 0) log.debug({ reports: delivered }, 'reports delivered');
        backoff.reset();
        isolating = false;
      } catch (caught) {
        if (abort.signal.aborted) break;
        let err = caught;
        if (err instanceof HubError && err.code === 'HUB_REPORTS_INVALID') {
          // The hub read the POST and refused it as invalid: find the batch (one file per post),
          // then the report in it (one report per post), and set only that aside.
          if (!isolating) {
            isolating = true;
            continue;
          }
          try {
            logSetAside(
              await queue.isolateOldest(
                (report) => post([report]),
                (e) =>
                  e instanceof HubError && e.code === 'HUB_REPORTS_INVALID'
                    ? { code: e.apiCode ?? e.code, message: e.message }
                    : undefined,
              ),
            );
            continue;
          } catch (inner) {
            if (abort.signal.aborted) break;
            err = inner;
          }
        }
        // Anything else (404 or 413 from an ingress, 401/403 from a proxy, 5xx, no answer) keeps
        // every report queued and tries again later; a 413 in smaller posts.
        if (err instanceof HubError && err.status === 413) isolating = true;
        const delay = backoff.next();
        log.warn(
          { code: (err as HubError).code, pending: queue.pendingBatches, retryInMs: delay },
          (err as Error).message,
        );
        await sleep(delay, abort.signal);
      }
    }
  };

  /** Reports set aside are an operator's to read: one error line each, naming the file. */
  const logSetAside = (setAside: SetAside[]): void => {
    for (const a of setAside) {
      log.error(
        { code: a.code, reportIds: a.reportIds, file: a.file, setAsideTotal: queue.setAsideFiles },
        `the hub refused a report as invalid; set aside in ${a.file}: ${a.message}`,
      );
    }
  };

  const resyncTimer = setInterval(() => {
    for (const r of reconcilers.values()) r.resync();
  }, config.resyncSeconds * 1000);

  // Bound before any loop starts, so a taken port fails the start with nothing left running.
  let loopsEnded = false;
  let status: StatusServer | undefined;
  if (config.statusPort !== undefined) {
    try {
      status = await StatusServer.start(config.statusHost ?? '0.0.0.0', config.statusPort, {
        live: () => !loopsEnded,
        // Ready once it reconciles: a credential and a set of assignments. The hub being away is
        // shown but does not make it unready: the agent keeps the cluster converged without it.
        readiness: () => ({
          checks: {
            credential: credential ? 'ok' : 'no credential yet (registering with the bootstrap token)',
            assignments: assignmentsKnown ? 'ok' : 'waiting for the first assignments from the hub',
          },
          hub: hubProblem ? `last call failed: ${hubProblem}` : 'ok',
        }),
        metrics,
      });
    } catch (err) {
      clearInterval(resyncTimer);
      await Promise.all([...reconcilers.values()].map((r) => r.stop()));
      await watcher.stop();
      await connections.close();
      ruled?.close();
      if (err instanceof StatusServerError) throw new AgentStartError(err.message, err.path);
      throw err;
    }
  }
  const loops = Promise.all([pullLoop(), deliveryLoop()]).finally(() => {
    loopsEnded = true;
  });
  log.info({ hub: config.hubUrl, stateDir: config.stateDir, status: status?.url }, 'agent started');

  let stopping: Promise<void> | undefined;
  return {
    clusterName: config.clusterName,
    statusUrl: status?.url,
    stop() {
      stopping ??= (async () => {
        abort.abort();
        clearInterval(resyncTimer);
        await loops;
        await Promise.all([...reconcilers.values()].map((r) => r.stop()));
        await Promise.all(deleting.values());
        await events.stop();
        await status?.stop();
        await watcher.stop();
        await connections.close();
        ruled?.close();
        log.info('agent stopped');
      })();
      return stopping;
    },
  };
}

/** SOPS decryption with the age keys from SOPS_AGE_KEY or the file SOPS_AGE_KEY_FILE names (none is fine). */
async function createDecryptor(config: AgentConfig): Promise<BundleDecryptor> {
  const variable = config.ageKey ? 'SOPS_AGE_KEY' : 'SOPS_AGE_KEY_FILE';
  let text = config.ageKey;
  if (!text && config.ageKeyFile) {
    try {
      text = await readFile(config.ageKeyFile, 'utf8');
    } catch (err) {
      throw new AgentStartError(
        `cannot read the age key file ${config.ageKeyFile}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
        variable,
      );
    }
  }
  try {
    return new BundleDecryptor(text);
  } catch (err) {
    throw new AgentStartError(`${variable} holds no usable age key: ${(err as Error).message}`, variable);
  }
}

function loadKubeConfig(config: AgentConfig): KubeConfig {
  const kc = new KubeConfig();
  try {
    if (config.kubeconfigPath) kc.loadFromFile(config.kubeconfigPath);
    else kc.loadFromCluster();
  } catch (err) {
    throw new AgentStartError(
      config.kubeconfigPath
        ? `cannot read the kubeconfig ${config.kubeconfigPath}: ${(err as Error).message}`
        : `KUBECONFIG is not set and no in-cluster service account is available: ${(err as Error).message}`,
      'KUBECONFIG',
    );
  }
  return kc;
}
