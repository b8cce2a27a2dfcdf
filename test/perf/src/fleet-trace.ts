import { Redis } from 'ioredis';
import type pg from 'pg';

/** One agent → hub request, as the in-process agents made it. */
export interface AgentCall {
  /** The agent's bearer credential: one key per cluster, without knowing its name. */
  agent: string;
  kind: 'assignments' | 'bundle' | 'reports' | 'other';
  status: number;
  /** Wall-clock ms (Date.now) when the request was sent and when its answer arrived. */
  sentAt: number;
  answeredAt: number;
}

/**
 * Records every request the agents of this process send to the hub, by wrapping the global
 * `fetch` their hub client uses (the agents are unchanged and cannot tell). Cheap: one object per
 * request. `stop()` restores the original `fetch`.
 */
export class AgentCallTrace {
  private calls: AgentCall[] = [];
  private readonly original = globalThis.fetch;

  constructor(private readonly hubUrl: string) {
    const prefix = `${hubUrl}/api/agent/v1/`;
    globalThis.fetch = async (input, init) => {
      const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
      if (!url.startsWith(prefix)) return this.original(input, init);
      const rest = url.slice(prefix.length);
      const kind = rest.startsWith('assignments')
        ? 'assignments'
        : rest.startsWith('bundles')
          ? 'bundle'
          : rest.startsWith('reports')
            ? 'reports'
            : 'other';
      const auth = new Headers(init?.headers).get('authorization') ?? '';
      const sentAt = Date.now();
      const res = await this.original(input, init);
      this.calls.push({ agent: auth, kind, status: res.status, sentAt, answeredAt: Date.now() });
      return res;
    };
  }

  /** Calls answered at or after `since` (wall-clock ms). */
  since(since: number): AgentCall[] {
    return this.calls.filter((c) => c.answeredAt >= since);
  }

  /** Forgets calls answered before `before`, so a long run keeps only what it still reads. */
  forget(before: number): void {
    this.calls = this.calls.filter((c) => c.answeredAt >= before);
  }

  stop(): void {
    globalThis.fetch = this.original;
  }
}

/** One stage of a commit's path, as per-cluster times after the webhook (ms). */
export interface PathStage {
  stage: string;
  /** Per cluster (or one value for a fleet-wide step), ms after the webhook was sent. */
  samples: number[];
  how: string;
}

/**
 * Where one commit's seconds went, from the webhook to the hub storing each cluster's report:
 * hub-side steps read from the rows and audit events the hub wrote (their own timestamps), agent-side
 * steps from the traced requests. Every time is wall-clock ms after `t0` (the webhook sent).
 */
export async function commitPath(
  q: <R extends pg.QueryResultRow>(sql: string, params: unknown[]) => Promise<R[]>,
  trace: AgentCall[],
  revision: string,
  t0: number,
  converged: number[],
): Promise<{ stages: PathStage[]; status: Record<string, number> }> {
  const after = (d: Date | string | null | undefined): number | undefined =>
    d == null ? undefined : new Date(d).getTime() - t0;

  const hub = await hubCommitSteps(q, revision, t0);
  // Per cluster: the agent's own apply times (reported in the sync run the new assignment started)
  // and when the hub stored them. Self-heal runs at the same revision come later and are counted
  // apart, so they do not stretch the apply.
  const runs = await q<{ started: Date; finished: Date; stored: Date }>(
    `SELECT min("startedAt") AS started, max("finishedAt") AS finished, max("createdAt") AS stored
       FROM "SyncRun" WHERE revision = $1 AND trigger = 'auto' GROUP BY "clusterId"`,
    [revision],
  );
  const otherRuns = await q<{ trigger: string; n: string }>(
    `SELECT trigger, count(*)::text AS n FROM "SyncRun" WHERE revision = $1 AND trigger <> 'auto' GROUP BY trigger`,
    [revision],
  );
  const synced = await q<{ at: Date }>(
    `SELECT max("lastSyncedAt") AS at FROM "Target" WHERE "lastSyncedRevision" = $1 GROUP BY "clusterId"`,
    [revision],
  );

  // Agent side: per agent, its first changed assignments answer, its last bundle fetched, and the
  // last report POST it had answered before the hub stored everything.
  const byAgent = new Map<string, AgentCall[]>();
  const status: Record<string, number> = {};
  for (const c of trace) {
    const mine = byAgent.get(c.agent);
    if (mine) mine.push(c);
    else byAgent.set(c.agent, [c]);
    const key = `${c.kind} ${c.status}`;
    status[key] = (status[key] ?? 0) + 1;
  }
  for (const r of otherRuns) status[`sync runs ${r.trigger}`] = Number(r.n);
  const firstAssignment: number[] = [];
  const lastBundle: number[] = [];
  const lastReport: number[] = [];
  const lastStored = runs.reduce((m, x) => Math.max(m, after(x.stored) ?? 0), -Infinity);
  for (const calls of byAgent.values()) {
    const a = calls.find((c) => c.kind === 'assignments' && c.status === 200);
    if (a) firstAssignment.push(a.answeredAt - t0);
    const b = calls.filter((c) => c.kind === 'bundle' && c.status === 200).at(-1);
    if (b) lastBundle.push(b.answeredAt - t0);
    const r = calls.filter((c) => c.kind === 'reports' && c.status < 300);
    const rr = r.filter((c) => c.answeredAt - t0 <= lastStored + 1).at(-1);
    if (rr) lastReport.push(rr.answeredAt - t0);
  }
  const stages: PathStage[] = [
    ...hub,
    {
      stage: 'agent long-poll answered with the commit',
      samples: firstAssignment,
      how: 'first 200 of GET assignments per agent',
    },
    { stage: 'agent fetched its bundles', samples: lastBundle, how: 'last GET bundles answered per agent' },
    {
      stage: 'agent started applying',
      samples: runs.map((r) => after(r.started) ?? 0),
      how: "min SyncRun.startedAt per cluster (trigger 'auto')",
    },
    {
      stage: 'agent finished applying',
      samples: runs.map((r) => after(r.finished) ?? 0),
      how: "max SyncRun.finishedAt per cluster (trigger 'auto')",
    },
    { stage: 'objects seen on the cluster', samples: converged, how: 'watch of each cluster' },
    {
      stage: 'agent report POST answered',
      samples: lastReport,
      how: 'last POST reports answered per agent before the hub stored the runs',
    },
    {
      stage: 'hub stored the sync runs',
      samples: runs.map((r) => after(r.stored) ?? 0),
      how: "max SyncRun.createdAt per cluster (trigger 'auto')",
    },
    {
      stage: 'hub marked the targets Synced',
      samples: synced.map((s) => after(s.at) ?? 0),
      how: 'max Target.lastSyncedAt per cluster',
    },
  ];
  return { stages, status };
}

/**
 * The hub's own steps for one commit, from the rows and audit events it wrote (their own
 * timestamps): the commit fetched, the appset expanded (targets written), the targets released.
 * Shared by the fleet bench and the swarm bench, so both split a commit's path the same way.
 */
export async function hubCommitSteps(
  q: <R extends pg.QueryResultRow>(sql: string, params: unknown[]) => Promise<R[]>,
  revision: string,
  t0: number,
): Promise<PathStage[]> {
  const after = (d: Date | string | null | undefined): number[] =>
    d == null ? [] : [new Date(d).getTime() - t0];
  const fetched = await q<{ at: Date | null }>(
    'SELECT min("resolvedAt") AS at FROM "RepositoryRef" WHERE sha = $1',
    [revision],
  );
  const expanded = await q<{ at: Date | null }>(
    `SELECT min(at) AS at FROM "AuditEvent" WHERE action = 'appset.expanded' AND at >= $1`,
    [new Date(t0)],
  );
  const released = await q<{ at: Date | null }>(
    'SELECT max("releasedAt") AS at FROM "Target" WHERE "releasedRevision" = $1',
    [revision],
  );
  return [
    { stage: 'hub fetched the commit', samples: after(fetched[0]?.at), how: 'RepositoryRef.resolvedAt' },
    { stage: 'hub expanded the appset', samples: after(expanded[0]?.at), how: 'audit appset.expanded' },
    { stage: 'hub released the targets', samples: after(released[0]?.at), how: 'max Target.releasedAt' },
  ];
}

/**
 * When the hub's pipeline jobs for a commit were queued, started and finished, from BullMQ's own job
 * hashes (kept for the last 100 completed jobs of each queue): the webhook's fetch (`source-sync`)
 * and the expansion it asked for (`appset-expand`, which also releases and wakes). Jobs queued
 * before `t0` are left out. ms after `t0`.
 */
export async function queueSteps(redisUrl: string, prefix: string, t0: number): Promise<PathStage[]> {
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: 1 });
  try {
    const stages: PathStage[] = [];
    for (const queue of ['source-sync', 'appset-expand']) {
      const ids = await redis.zrangebyscore(`${prefix}:${queue}:completed`, t0, '+inf');
      const jobs = await Promise.all(
        ids.map((id) => redis.hmget(`${prefix}:${queue}:${id}`, 'timestamp', 'processedOn', 'finishedOn')),
      );
      const times = jobs
        .map(([queued, started, finished]) => ({
          queued: Number(queued),
          started: Number(started),
          finished: Number(finished),
        }))
        .filter((j) => j.queued >= t0);
      if (times.length === 0) continue;
      const first = (k: 'queued' | 'started' | 'finished'): number[] => [
        Math.min(...times.map((j) => j[k])) - t0,
      ];
      const how = `BullMQ ${queue} job (${times.length} after the webhook)`;
      stages.push(
        { stage: `${queue} job queued`, samples: first('queued'), how: `${how}: first timestamp` },
        { stage: `${queue} job started`, samples: first('started'), how: `${how}: first processedOn` },
        {
          stage: `${queue} job finished`,
          samples: [Math.max(...times.map((j) => j.finished)) - t0],
          how: `${how}: last finishedOn`,
        },
      );
    }
    return stages;
  } finally {
    redis.disconnect();
  }
}
