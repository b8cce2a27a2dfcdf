import { randomUUID } from 'node:crypto';
import { waitFor } from '@flotilla/cli/fleet';
import { AGENT_API, type Report, type ReportBatchResponse } from '@flotilla/contract';
import { fleetAppSet, type AppShape } from '../app-repo.js';
import { HubStack } from '../hub-stack.js';
import { figure, summarize } from '../stats.js';
import { type BenchFn, type Figure } from '../types.js';

const COMMAND = 'npm run bench -- --only ingest';

interface Agent {
  clusterId: string;
  credential: string;
  targets: { id: string; revision: string; digest: string }[];
}

/**
 * Report ingest at fleet scale: N registered agents (real credentials, the real HTTP route) post a
 * batch each at the same moment — a sync and a health report per target, as after a commit — for
 * several rounds; then the first round again, all replays. Against the floor of a bare multi-row
 * INSERT of the very rows the hub stored (reports, sync runs, audit events) in one transaction.
 */
export const ingestBench: BenchFn = async (ctx) => {
  const clusters = ctx.quick ? 20 : 100;
  const shape: AppShape = { apps: 10, deployments: 1, services: 1, configMaps: 1 };
  const rounds = ctx.quick ? 3 : 8;
  const bench = 'ingest';
  const figures: Figure[] = [];
  const stack = await HubStack.start(shape, ctx.progress);
  try {
    await stack.addRepository();
    const agents = await registerAgents(stack, clusters);
    await stack.api.createAppSet(fleetAppSet('ingest', stack.repoUrl));
    const want = clusters * shape.apps;
    await waitFor(
      `the hub to expand ${want} targets`,
      async () => {
        const v = await stack.api.request<{ status: string; targetCount: number }>(
          'GET',
          '/api/v1/appsets/ingest',
        );
        return v.status === 'Ready' && v.targetCount === want ? true : undefined;
      },
      { timeoutMs: 120_000, intervalMs: 100 },
    );
    const rows = await stack.sql(
      async (c) =>
        (
          await c.query<{ id: string; clusterId: string; desiredRevision: string; bundleDigest: string }>(
            'SELECT "id", "clusterId", "desiredRevision", "bundleDigest" FROM "Target"',
          )
        ).rows,
    );
    for (const r of rows) {
      agents
        .find((a) => a.clusterId === r.clusterId)
        ?.targets.push({ id: r.id, revision: r.desiredRevision, digest: r.bundleDigest });
    }

    const rates: number[] = [];
    const latencies: number[] = [];
    let first: Report[][] = [];
    const deadline = performance.now() + 120_000;
    for (let round = 0; round < rounds && performance.now() < deadline; round++) {
      const batches = agents.map((a) => batchFor(a, round));
      if (round === 0) first = batches;
      const { ms, perBatch, accepted } = await postAll(stack, agents, batches);
      const reports = batches.reduce((n, b) => n + b.length, 0);
      if (accepted !== reports) throw new Error(`round ${round}: ${accepted} of ${reports} reports accepted`);
      rates.push((reports / ms) * 1000);
      latencies.push(...perBatch);
      ctx.progress(`round ${round + 1}: ${reports} reports from ${clusters} agents in ${ms.toFixed(0)} ms`);
    }
    const replay = await postAll(stack, agents, first);
    const replayed = first.reduce((n, b) => n + b.length, 0);
    if (replay.accepted !== 0) throw new Error(`a replay was accepted: ${replay.accepted} reports`);
    ctx.progress(`replay of ${replayed} reports: ${replay.ms.toFixed(0)} ms, all duplicates`);

    const floor = await bareInsert(stack);
    const perRound = clusters * shape.apps * 2;
    figures.push(
      figure({
        id: `ingest.rate.${clusters}`,
        bench,
        title: `report ingest: ${clusters} agents post a batch each at once (${perRound} reports per round), reports/s`,
        unit: 'reports/s',
        fleetSize: clusters,
        samples: rates,
        floor: {
          what: 'bare multi-row INSERT of the same report, sync-run and audit rows, one transaction',
          samples: [floor],
        },
        notes:
          'each run = one round; the p99 column is the 99th percentile of per-round rates (higher is better; the slow tail is the min). Ratio below 1 = slower than the floor',
        command: COMMAND,
      }),
      figure({
        id: `ingest.batch-latency.${clusters}`,
        bench,
        title: `report ingest: one agent's batch POST (${shape.apps * 2} reports) answered, ${clusters} agents at once`,
        unit: 'ms',
        fleetSize: clusters,
        samples: latencies,
        notes: 'the agent drops its buffer when this answers; includes the queue for a pooled connection',
        command: COMMAND,
      }),
      figure({
        id: `ingest.replay-rate.${clusters}`,
        bench,
        title: `report ingest: the first round sent again (${replayed} replays, all counted duplicate), reports/s`,
        unit: 'reports/s',
        fleetSize: clusters,
        samples: [(replayed / replay.ms) * 1000],
        command: COMMAND,
      }),
    );
    const s = summarize(rates);
    return {
      figures,
      series: [],
      remarks: [
        `report ingest at ${clusters} agents: median ${s.median.toFixed(0)} reports/s; floor ${floor.toFixed(0)} reports/s`,
      ],
    };
  } finally {
    await stack.stop();
  }
};

async function registerAgents(stack: HubStack, clusters: number): Promise<Agent[]> {
  const agents: Agent[] = [];
  for (let i = 0; i < clusters; i += 20) {
    const slice = Array.from({ length: Math.min(20, clusters - i) }, (_, j) => `c-${i + j + 1}`);
    agents.push(
      ...(await Promise.all(
        slice.map(async (name) => {
          const reg = await stack.api.registerCluster(name, {}, { server: `https://${name}.example:6443` });
          const res = await fetch(`${stack.hubUrl}${AGENT_API.register}`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ clusterName: name, bootstrapToken: reg.bootstrapToken }),
          });
          if (!res.ok)
            throw new Error(`agent registration of ${name}: HTTP ${res.status} ${await res.text()}`);
          const body = (await res.json()) as { clusterId: string; credential: string };
          return { clusterId: body.clusterId, credential: body.credential, targets: [] };
        }),
      )),
    );
  }
  return agents;
}

/** What an agent sends after syncing every target: a sync and a health report each. */
function batchFor(agent: Agent, round: number): Report[] {
  const at = new Date().toISOString();
  return agent.targets.flatMap((t): Report[] => [
    {
      id: randomUUID(),
      type: 'sync',
      targetId: t.id,
      at,
      revision: t.revision,
      bundleDigest: t.digest,
      trigger: 'auto',
      outcome: 'Succeeded',
      startedAt: at,
      finishedAt: at,
      message: '',
      resources: [],
    },
    {
      id: randomUUID(),
      type: 'health',
      targetId: t.id,
      at,
      // Alternating, so every round also writes a health.changed audit event per target.
      status: round % 2 ? 'Progressing' : 'Healthy',
      message: '',
      resources: [],
    },
  ]);
}

async function postAll(
  stack: HubStack,
  agents: Agent[],
  batches: Report[][],
): Promise<{ ms: number; perBatch: number[]; accepted: number }> {
  const t0 = performance.now();
  const perBatch: number[] = [];
  const answers = await Promise.all(
    agents.map(async (a, i) => {
      const start = performance.now();
      const res = await fetch(`${stack.hubUrl}${AGENT_API.reports}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${a.credential}` },
        body: JSON.stringify({ reports: batches[i] }),
      });
      if (!res.ok) throw new Error(`report batch of ${a.clusterId}: HTTP ${res.status} ${await res.text()}`);
      const body = (await res.json()) as ReportBatchResponse;
      perBatch.push(performance.now() - start);
      return body.accepted;
    }),
  );
  return { ms: performance.now() - t0, perBatch, accepted: answers.reduce((n, x) => n + x, 0) };
}

/**
 * The floor: every stored report, sync run and audit event (at most `limit` rows of each), read
 * back and inserted into copies of their tables with multi-row INSERTs in one transaction. Reports
 * per second of that.
 */
export async function bareInsert(stack: HubStack, limit?: number): Promise<number> {
  return stack.sql(async (c) => {
    const tables = ['ProcessedReport', 'SyncRun', 'AuditEvent'];
    const data = new Map<string, Record<string, unknown>[]>();
    for (const t of tables)
      data.set(
        t,
        (await c.query<Record<string, unknown>>(`SELECT * FROM "${t}"${limit ? ` LIMIT ${limit}` : ''}`))
          .rows,
      );
    const reports = data.get('ProcessedReport')?.length ?? 0;
    for (const t of tables) {
      await c.query(`DROP TABLE IF EXISTS "bench_${t}"`);
      await c.query(`CREATE TABLE "bench_${t}" (LIKE "${t}" INCLUDING ALL)`);
    }
    const t0 = performance.now();
    await c.query('BEGIN');
    for (const t of tables) {
      const rows = data.get(t) ?? [];
      const cols = Object.keys(rows[0] ?? {});
      for (let i = 0; i < rows.length; i += 500) {
        const values: unknown[] = [];
        const tuples = rows.slice(i, i + 500).map((row, j) => {
          for (const col of cols) {
            const v = row[col];
            values.push(v !== null && typeof v === 'object' && !(v instanceof Date) ? JSON.stringify(v) : v);
          }
          return `(${cols.map((_, k) => `$${j * cols.length + k + 1}`).join(',')})`;
        });
        await c.query(
          `INSERT INTO "bench_${t}" (${cols.map((col) => `"${col}"`).join(',')}) VALUES ${tuples.join(',')}`,
          values,
        );
      }
    }
    await c.query('COMMIT');
    const ms = performance.now() - t0;
    for (const t of tables) await c.query(`DROP TABLE "bench_${t}"`);
    return (reports / ms) * 1000;
  });
}
