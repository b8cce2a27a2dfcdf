import { type Bundle } from '@flotilla/contract';
import { type Logger } from 'pino';
import { type AgentCredential } from '../hub/agent-credential.js';
import { type CapabilitiesReporter } from '../hub/capabilities-reporter.js';
import { pollSecondsBeforeRotation } from '../hub/credential-rotation.js';
import { type HubClient, HubCallError } from '../hub/hub-client.js';
import { type TargetSet } from '../reconcile/target-set.js';
import { type StateStore } from '../state/state-store.js';
import { Backoff, sleep } from '../util/backoff.js';
import { assignmentsThatRun, type BundleFetcher } from './bundle-fetcher.js';

export interface AssignmentPullerDeps {
  hub: HubClient;
  store: StateStore;
  credential: AgentCredential;
  capabilities: CapabilitiesReporter;
  bundles: BundleFetcher;
  targets: TargetSet;
  log: Logger;
  now: () => Date;
  /** How long the hub may hold a long-poll (the `wait` parameter), before rotation shortens it. */
  longPollSeconds: number;
  /** Back-off between failed hub calls. */
  backoff: { initialMs: number; maxMs: number };
  /** Aborted when the agent stops: the loop ends after the call in flight. */
  signal: AbortSignal;
}

/**
 * The pull side of the protocol: resumes from the assignments on disk, then long-polls the hub for
 * its cluster's assignments, fetches and verifies their bundles, and hands each new set to the
 * targets. The hub being away only means backing off: the targets keep running on what they have.
 */
export class AssignmentPuller {
  private etag: string | undefined;
  private known = false;
  private problem: string | undefined;

  constructor(private readonly deps: AssignmentPullerDeps) {}

  /** Set once the agent works from a set of assignments, from its disk or from the hub (readiness). */
  get assignmentsKnown(): boolean {
    return this.known;
  }

  /** The last hub call's failure, shown by /readyz (informational: the agent works on without the hub). */
  get hubProblem(): string | undefined {
    return this.problem;
  }

  /** Resume from disk before the hub answers. */
  async resume(): Promise<void> {
    const { store, targets, log } = this.deps;
    const cached = await store.loadAssignments();
    if (!cached) return;
    this.etag = cached.etag;
    const bundles = new Map<string, Bundle>();
    const deletions = cached.deletions ?? [];
    for (const digest of [...cached.assignments, ...deletions].map((a) => a.bundleDigest)) {
      const b = await store.loadBundle(digest);
      if (b) bundles.set(digest, b);
      else this.etag = undefined; // fetch the whole set again so the missing bundle is re-fetched
    }
    // The rules kept with them: the agent judges as the hub last said while the hub is away.
    await targets.useHealthRules(cached.healthRules);
    await targets.apply(cached.assignments, bundles, deletions);
    this.known = true;
    log.info({ targets: targets.size, etag: cached.etag }, 'resumed from the state dir');
  }

  /** Polls until the signal aborts. */
  async run(): Promise<void> {
    const { signal, log } = this.deps;
    const backoff = new Backoff(this.deps.backoff);
    while (!signal.aborted) {
      try {
        await this.pollOnce();
        this.known = true;
        this.problem = undefined;
        backoff.reset();
      } catch (err) {
        if (signal.aborted) break;
        // Only the hub's typed answer means the credential is gone; a bare 401/403 (a proxy, a
        // hub mid-restart) is retried below with the same credential.
        if (err instanceof HubCallError && err.code === 'hub-credential-gone')
          this.deps.credential.markGone(err);
        this.problem = err instanceof HubCallError ? err.code : 'error';
        const delay = backoff.next();
        const e = err as Error & { code?: string; path?: string };
        log.warn({ code: e.code, path: e.path, retryInMs: delay }, e.message);
        await sleep(delay, signal);
      }
    }
  }

  private async pollOnce(): Promise<void> {
    const { hub, store, credential, capabilities, targets, log, now, signal } = this.deps;
    const cred = await credential.rotateIfDue(await credential.ensure());
    await capabilities.reportIfDue(cred);
    const wait = pollSecondsBeforeRotation(await store.loadCredential(), this.deps.longPollSeconds, now());
    const poll = await hub.assignments(cred, this.etag, wait, signal);
    if (!poll.changed) return;
    const response = poll.response;
    // Before any sync of the new set: its waves wait on objects as the new rules judge them.
    await targets.useHealthRules(response.healthRules);
    const { bundles, failures } = await this.deps.bundles.fetch(cred, response);
    if (failures.length > 0) {
      // Apply what verified, keep the old state for the rest, and retry the set after a back-off.
      // What will run is saved first: a restart while the hub is away resumes there.
      await store.saveAssignments(assignmentsThatRun(response, await store.loadAssignments(), bundles));
      await targets.apply(response.assignments, bundles, response.deletions);
      throw new HubCallError('hub-bad-response', 'bundles', failures.join('; '));
    }
    await store.saveAssignments(response);
    await targets.apply(response.assignments, bundles, response.deletions);
    this.etag = response.etag;
    log.debug({ etag: this.etag, targets: response.assignments.length }, 'assignments updated');
  }
}
