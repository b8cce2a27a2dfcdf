import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import {
  AGENT_API,
  AGENT_FEATURES,
  AGENT_FEATURES_HEADER,
  AGENT_VERSION_HEADER,
  BUNDLE_BATCH_MAX,
  assignmentsResponseSchema,
  bundleBatchResponseSchema,
  capabilitiesResponseSchema,
  groupOf,
  registerResponseSchema,
  reportBatchResponseSchema,
  type Assignment,
  type Bundle,
  type ClusterCapabilities,
  type HealthReport,
  type Report,
  type SyncReport,
} from '@flotilla/contract';
import { bundleDigest } from '@flotilla/manifests';

/** What the swarm announces, as the agent of this tree does (its version says it is the swarm). */
const SWARM_VERSION = 'swarm-0.1.0';
/** What a kube-sim cluster's discovery says, sent once after registration as the agent does at start. */
const CAPABILITIES: ClusterCapabilities = {
  kubeVersion: 'v1.31.0',
  apiVersions: ['apps/v1', 'v1'],
};
/** The agent's default hold (`longPollSeconds`) and its first back-off after a failed call. */
const LONG_POLL_SECONDS = 30;
const BACKOFF_MS = { initialMs: 1_000, maxMs: 10_000 };
/** The agent's report queue: at most this many reports a POST. */
const REPORTS_PER_POST = 500;

/** When this client reached each step of one revision (wall-clock ms, Date.now()). */
export interface RevisionTimes {
  answeredAt?: number;
  bundlesAt?: number;
  reportedAt?: number;
}

/**
 * Bundle digests this shard has already verified (content hashes to the digest): every client
 * still fetches its own bundles from the hub, as an agent would; only the hash is not done twice.
 */
const verified = new Set<string>();

/**
 * One cluster's agent, reduced to its protocol: registration with the bootstrap token, the
 * capabilities report, the assignments long-poll with its ETag, bundles fetched by digest in
 * batches and verified, and a sync and a health report per changed target posted with ids of
 * their own (resent unchanged until the hub acknowledges them). Nothing is applied: a target
 * counts as synced and healthy the moment its bundle is held. Every answer is parsed with the
 * contract's schemas, every call carries the agent's features and version headers.
 */
export class SwarmClient {
  private credential = '';
  private etag: string | undefined;
  /** Bundles this client holds, by digest (an agent's state dir). */
  private readonly held = new Map<string, Bundle>();
  /** The digest each target last "applied". */
  private readonly applied = new Map<string, string>();
  /** Batches waiting for the hub, oldest first, each with the revision it reports. */
  private readonly queue: { reports: Report[]; revision: string }[] = [];
  private wakeDelivery: (() => void) | undefined;
  readonly times = new Map<string, RevisionTimes>();
  /** Targets of the last answer, for the ingest burst. */
  assignments: Assignment[] = [];
  /** Calls answered with each status (`assignments 200`, `reports 200`, …), and failures. */
  readonly calls = new Map<string, number>();

  constructor(
    private readonly hubUrl: string,
    readonly name: string,
    private readonly signal: AbortSignal,
  ) {}

  /** Trades the bootstrap token for a credential and reports the cluster's capabilities. */
  async start(bootstrapToken: string): Promise<void> {
    const reg = await this.call(AGENT_API.register, registerResponseSchema, {
      method: 'POST',
      body: { clusterName: this.name, bootstrapToken, agentVersion: SWARM_VERSION },
    });
    this.credential = reg.credential;
    await this.call(AGENT_API.capabilities, capabilitiesResponseSchema, {
      method: 'PUT',
      body: CAPABILITIES,
    });
  }

  /** The poll and delivery loops, until the signal aborts. */
  run(): Promise<void> {
    return Promise.all([this.pollLoop(), this.deliveryLoop()]).then(() => undefined);
  }

  private async pollLoop(): Promise<void> {
    let delay = BACKOFF_MS.initialMs;
    while (!this.signal.aborted) {
      try {
        await this.pollOnce();
        delay = BACKOFF_MS.initialMs;
      } catch (err) {
        if (this.signal.aborted) return;
        this.count(`assignments ${(err as SwarmCallError).status ?? 'failed'}`);
        await sleep(delay, this.signal);
        delay = Math.min(delay * 2, BACKOFF_MS.maxMs);
      }
    }
  }

  private async pollOnce(): Promise<void> {
    const path = `${AGENT_API.assignments}?wait=${LONG_POLL_SECONDS}`;
    const res = await this.fetch(path, { ifNoneMatch: this.etag });
    if (res.status === 304) {
      this.count('assignments 304');
      return;
    }
    const answer = await this.parse(path, res, assignmentsResponseSchema);
    const revision = answer.assignments[0]?.revision ?? '';
    this.step(revision, 'answeredAt');
    const missing = [...new Set(answer.assignments.map((a) => a.bundleDigest))].filter(
      (d) => !this.held.has(d),
    );
    for (let i = 0; i < missing.length; i += BUNDLE_BATCH_MAX) {
      const got = await this.call(AGENT_API.bundleBatch, bundleBatchResponseSchema, {
        method: 'POST',
        body: { digests: missing.slice(i, i + BUNDLE_BATCH_MAX) },
      });
      for (const b of got.bundles) {
        if (!verified.has(b.digest)) {
          if (bundleDigest(b.manifests) !== b.digest) throw new Error(`bundle ${b.digest} does not verify`);
          verified.add(b.digest);
        }
        this.held.set(b.digest, b);
      }
    }
    if (missing.some((d) => !this.held.has(d))) throw new Error('the hub refused a bundle: poll again');
    this.step(revision, 'bundlesAt');
    const changed = answer.assignments.filter((a) => this.applied.get(a.targetId) !== a.bundleDigest);
    const at = new Date().toISOString();
    const reports = changed.flatMap((a) => this.reportsFor(a, at));
    for (const a of changed) this.applied.set(a.targetId, a.bundleDigest);
    for (let i = 0; i < reports.length; i += REPORTS_PER_POST)
      this.queue.push({ reports: reports.slice(i, i + REPORTS_PER_POST), revision });
    if (reports.length === 0) this.step(revision, 'reportedAt');
    this.assignments = answer.assignments;
    this.etag = answer.etag;
    this.wakeDelivery?.();
  }

  /** What the agent sends after a sync that applied every object: a sync and a health report. */
  reportsFor(a: Assignment, at: string, trigger: SyncReport['trigger'] = 'auto'): Report[] {
    const objects = (this.held.get(a.bundleDigest)?.manifests ?? []).map((m) => ({
      group: groupOf(m.apiVersion),
      kind: m.kind,
      ...(m.metadata.namespace !== undefined && { namespace: m.metadata.namespace }),
      name: m.metadata.name,
    }));
    const sync: SyncReport = {
      type: 'sync',
      id: randomUUID(),
      targetId: a.targetId,
      at,
      revision: a.revision,
      bundleDigest: a.bundleDigest,
      trigger,
      outcome: 'Succeeded',
      startedAt: at,
      finishedAt: at,
      message: '',
      resources: objects.map((o) => ({ ...o, action: 'applied' as const, message: '' })),
    };
    const health: HealthReport = {
      type: 'health',
      id: randomUUID(),
      targetId: a.targetId,
      at,
      status: 'Healthy',
      message: '',
      resources: objects.map((o) => ({ ...o, status: 'Healthy' as const, message: '' })),
    };
    return [sync, health];
  }

  /** Posts queued batches oldest first; a failed post is sent again unchanged (same ids). */
  private async deliveryLoop(): Promise<void> {
    let delay = BACKOFF_MS.initialMs;
    while (!this.signal.aborted) {
      const next = this.queue[0];
      if (!next) {
        await new Promise<void>((resolve) => {
          const done = (): void => {
            this.signal.removeEventListener('abort', done);
            this.wakeDelivery = undefined;
            resolve();
          };
          this.wakeDelivery = done;
          this.signal.addEventListener('abort', done, { once: true });
        });
        continue;
      }
      try {
        await this.postReports(next.reports);
        this.queue.shift();
        if (!this.queue.some((b) => b.revision === next.revision)) this.step(next.revision, 'reportedAt');
        delay = BACKOFF_MS.initialMs;
      } catch {
        if (this.signal.aborted) return;
        await sleep(delay, this.signal);
        delay = Math.min(delay * 2, BACKOFF_MS.maxMs);
      }
    }
  }

  /** One POST of reports; the hub's answer (accepted, duplicates). */
  async postReports(reports: Report[]): Promise<{ accepted: number; duplicates: number }> {
    return this.call(AGENT_API.reports, reportBatchResponseSchema, { method: 'POST', body: { reports } });
  }

  private step(revision: string, key: keyof RevisionTimes): void {
    const t = this.times.get(revision) ?? {};
    t[key] ??= Date.now();
    this.times.set(revision, t);
  }

  private count(key: string): void {
    this.calls.set(key, (this.calls.get(key) ?? 0) + 1);
  }

  private async call<T>(
    path: string,
    schema: z.ZodType<T>,
    init: { method: string; body: unknown },
  ): Promise<T> {
    return this.parse(path, await this.fetch(path, init), schema);
  }

  private async fetch(
    path: string,
    init: { method?: string; body?: unknown; ifNoneMatch?: string | undefined },
  ): Promise<Response> {
    const headers: Record<string, string> = {
      [AGENT_FEATURES_HEADER]: AGENT_FEATURES.join(','),
      [AGENT_VERSION_HEADER]: SWARM_VERSION,
    };
    if (this.credential) headers['authorization'] = `Bearer ${this.credential}`;
    if (init.body !== undefined) headers['content-type'] = 'application/json';
    if (init.ifNoneMatch !== undefined) headers['if-none-match'] = init.ifNoneMatch;
    const res = await fetch(this.hubUrl + path, {
      method: init.method ?? 'GET',
      headers,
      ...(init.body !== undefined && { body: JSON.stringify(init.body) }),
      signal: this.signal,
    });
    if (res.status !== 304 && !res.ok) {
      const text = await res.text().catch(() => '');
      throw new SwarmCallError(`${path}: HTTP ${res.status} ${text.slice(0, 200)}`, res.status);
    }
    return res;
  }

  private async parse<T>(path: string, res: Response, schema: z.ZodType<T>): Promise<T> {
    const kind = path.split('?')[0]?.split('/').slice(4, 5)[0] ?? path;
    this.count(`${kind} ${res.status}`);
    const parsed = schema.safeParse(await res.json());
    if (!parsed.success)
      throw new Error(`${path}: the answer does not match the contract: ${z.prettifyError(parsed.error)}`);
    return parsed.data;
  }
}

class SwarmCallError extends Error {
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}
