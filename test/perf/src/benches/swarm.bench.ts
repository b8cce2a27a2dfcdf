import { execFileSync, spawn } from 'node:child_process';
import { cpus } from 'node:os';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { waitFor } from '@flotilla/cli/fleet';
import { fleetAppSet, type AppShape } from '../app-repo.js';
import { HubStack } from '../hub-stack.js';
import { onStop } from '../cleanup.js';
import { procCpuSeconds, procMemory, sampleIdle } from '../proc-stats.js';
import { figure, summarize } from '../stats.js';
import { SwarmShard, type BurstResult } from '../swarm-shard.js';
import { inBatches } from '../shard-process.js';
import { type BenchFn, type Figure, type Target } from '../types.js';
import { bareInsert } from './ingest.bench.js';
import { hubCommitSteps, queueSteps, type PathStage } from '../fleet-trace.js';

const COMMAND = 'npm run bench -- --only swarm';
const REGISTER_IN_FLIGHT = 16;
const MAX_SHARDS = 4;
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const median = (xs: number[]): number => (xs.length ? summarize(xs).median : NaN);

/** The targets (#23), judged at 1,000 clusters and above only. */
const TARGETS = {
  answered: { on: 'max', op: '<', value: 3_000, text: 'every long-poll answered ≤ 3 s (goal 1 s)' },
  bundles: { on: 'max', op: '<', value: 6_000, text: 'every client holds its bundles ≤ 6 s (goal 2 s)' },
  synced: { on: 'max', op: '<', value: 30_000, text: 'hub reports every target Synced ≤ 30 s (goal 10 s)' },
  ingest: { on: 'median', op: '>', value: 2_000, text: '≥ 2,000 reports/s (goal 10,000)' },
  idleCpu: { on: 'median', op: '<', value: 25, text: '< 25 % of the core at 10,000 clusters (goal 10 %)' },
} satisfies Record<string, Target>;

/**
 * The hub apart from its fleet: the real hub process pinned to one core (`taskset`), and a swarm of
 * light clients that speak the agent protocol (swarm-client.ts) in up to 4 shard processes pinned to
 * the other core, so the hub can be loaded with 1,000 and 10,000 clusters. Nothing is applied; the
 * real agents and simulated clusters give the end-to-end figures (`fleet`).
 */
export const swarmBench: BenchFn = async (ctx) => {
  const count = ctx.params['clusters'] ?? 100;
  const judged = count >= 1000;
  const shape: AppShape = { apps: 10, deployments: 1, services: 1, configMaps: 1 };
  const bench = 'swarm';
  const started = performance.now();
  const limitMs = (ctx.params['limitSeconds'] ?? 10 * 60) * 1000;
  const left = (): number => limitMs - 30_000 - (performance.now() - started);
  const capped: string[] = [];
  // Two cores or more: the hub on core 0, the swarm, this process and the floor's server split so
  // that each side's CPU is its own (PostgreSQL and Redis are not pinned).
  const pinned = cpus().length >= 2;
  const hubCore = pinned ? '0' : undefined;
  const pin = (pid: number, core: string): void => {
    if (pinned) execFileSync('taskset', ['-a', '-p', '-c', core, String(pid)], { stdio: 'ignore' });
  };
  pin(process.pid, '1');
  const stack = await HubStack.start(shape, ctx.progress, {
    privateRedis: true,
    ...(hubCore !== undefined && { cpuList: hubCore }),
  });
  const shards: SwarmShard[] = [];
  const db = new pg.Client({ connectionString: stack.databaseUrl });
  // Dropping the database (stop, or the runner's clean-up past the limit) ends this connection.
  db.on('error', () => undefined);
  /** The bench's own queries on `db`, left out of the hub's transaction count. */
  let benchQueries = 0;
  const hubTransactions = async (): Promise<number> => (await stack.pgTransactions()) - benchQueries;
  const swarmCpu = (): number => shards.reduce((n, s) => n + procCpuSeconds(s.pid), 0);
  const hubCpu = (): number => procCpuSeconds(stack.hub.pid);
  try {
    await db.connect();
    // Startup: clusters registered through the API, then the shards register their clients.
    const t0 = performance.now();
    const names = Array.from({ length: count }, (_, i) => `s-${i + 1}`);
    const registered = await inBatches(names, REGISTER_IN_FLIGHT, async (name) => ({
      name,
      bootstrapToken: (await stack.api.registerCluster(name)).bootstrapToken,
    }));
    const shardCount = Math.min(MAX_SHARDS, Math.ceil(count / 250));
    const perShard = Math.ceil(count / shardCount);
    for (let k = 0; k < shardCount; k++) {
      shards.push(
        await SwarmShard.start(
          {
            hubUrl: stack.hubUrl,
            clusters: registered.slice(k * perShard, (k + 1) * perShard),
            startInFlight: Math.ceil(REGISTER_IN_FLIGHT / shardCount),
          },
          (pid) => pin(pid, '1'),
        ),
      );
    }
    const longPolls = async (): Promise<number> =>
      (await stack.hubMetric('flotilla_agent_long_polls')) ?? NaN;
    await waitFor(
      'every client to hold a long-poll',
      async () => ((await longPolls()) >= count ? true : undefined),
      {
        timeoutMs: Math.min(180_000, left() / 3),
        intervalMs: 250,
      },
    );
    const startupMs = performance.now() - t0;
    ctx.progress(
      `${count} clients registered and long-polling in ${(startupMs / 1000).toFixed(1)} s (${shards.length} shards)`,
    );

    const progressOf = async (revision: string) =>
      (await Promise.all(shards.map((s) => s.progress([revision])))).flatMap((p) => p[revision] ?? []);
    const hubAllSynced = async (revision: string): Promise<boolean> => {
      benchQueries++;
      const r = await db.query<{ total: number; synced: number }>(
        `SELECT count(*)::int AS total,
                count(*) FILTER (WHERE "lastSyncedAt" IS NOT NULL AND "desiredRevision" = $1
                  AND "lastSyncedRevision" = "desiredRevision"
                  AND "lastSyncedDigest" IS NOT DISTINCT FROM "bundleDigest")::int AS synced
           FROM "Target"`,
        [revision],
      );
      const row = r.rows[0];
      return !!row && row.total === count * shape.apps && row.synced === row.total;
    };
    /** From `t0` (wall clock) until every client has reported `revision` and the hub says Synced. */
    const rollout = async (revision: string, t0Wall: number, capMs: number) => {
      let syncedAt: number | undefined;
      const ok = await waitFor(
        `${revision} to reach every client and be Synced`,
        async () => {
          const p = await progressOf(revision);
          if (syncedAt === undefined && (await hubAllSynced(revision))) syncedAt = Date.now() - t0Wall;
          return syncedAt !== undefined && p.every((t) => t.reportedAt !== undefined) ? true : undefined;
        },
        { timeoutMs: Math.max(5_000, capMs), intervalMs: 250 },
      ).catch(() => false);
      if (!ok)
        capped.push(
          `${revision}: not every client reported and the hub said Synced within ${(capMs / 1000).toFixed(0)} s`,
        );
      const times = await progressOf(revision);
      const after = (key: 'answeredAt' | 'bundlesAt' | 'reportedAt'): number[] =>
        times.map((t) => {
          const at = t[key];
          return at === undefined ? capMs : at - t0Wall;
        });
      return {
        answered: after('answeredAt'),
        bundles: after('bundlesAt'),
        reported: after('reportedAt'),
        synced: syncedAt ?? capMs,
      };
    };

    // Cold fleet: the appset posted, every target released to every client.
    await stack.addRepository();
    let revision = (await stack.repo.git.revparse(['HEAD'])).trim();
    const coldWall = Date.now();
    await stack.api.createAppSet(fleetAppSet('swarm', stack.repoUrl));
    // The cold fleet may take what the idle window, the commits and the floors leave (about 150 s).
    const cold = await rollout(
      revision,
      coldWall,
      Math.round(Math.max(30_000, Math.min(300_000, left() - 150_000))),
    );
    ctx.progress(
      `cold: every client reported after ${Math.max(...cold.reported)} ms, hub Synced after ${cold.synced} ms`,
    );

    // Idle: one 30 s window, one long-poll cycle of every client.
    await sleep(5_000);
    const idleMs = ctx.quick ? 5_000 : 30_000;
    const [hubIdle0, swarmIdle0, idleT0] = [hubCpu(), swarmCpu(), performance.now()];
    const idle = await sampleIdle(stack.hub.pid, idleMs, 10);
    const idleSeconds = (performance.now() - idleT0) / 1000;
    const hubIdlePct = ((hubCpu() - hubIdle0) / idleSeconds) * 100;
    const swarmIdlePct = ((swarmCpu() - swarmIdle0) / idleSeconds) * 100;
    const polling: number[] = [];
    for (let k = 0; k < 5; k++) {
      if (k > 0) await sleep(500);
      polling.push(((await longPolls()) * 100) / count);
    }
    ctx.progress(
      `idle: hub ${hubIdlePct.toFixed(1)} % of its core, swarm ${swarmIdlePct.toFixed(1)} %, polling ${polling.map((p) => p.toFixed(1)).join(', ')} %`,
    );

    // Commits, each a signed push webhook.
    const commits = ctx.quick ? 1 : count >= 10_000 ? 1 : 2;
    const answered: number[] = [];
    const bundles: number[] = [];
    const reported: number[] = [];
    const synced: number[] = [];
    const hubRollout: number[] = [];
    const swarmRollout: number[] = [];
    const hubRss: number[] = [];
    const hubCpuSeconds: number[] = [];
    const pgPerCommit: number[] = [];
    /** Each commit's path, step by step (ms after the webhook), summed over the commits by step. */
    const pathStages = new Map<string, PathStage>();
    for (let k = 1; k <= commits; k++) {
      if (k > 1 && left() < 120_000 + (synced.at(-1) ?? 0)) {
        capped.push(`only ${k - 1} of ${commits} commits fitted the job's time limit`);
        break;
      }
      revision = await stack.repo.commitRelease(`r${k}`);
      const pg0 = await hubTransactions();
      const [h0, s0, w0] = [hubCpu(), swarmCpu(), Date.now()];
      await stack.pushWebhook(revision);
      const webhookAnswered = Date.now() - w0;
      const r = await rollout(revision, w0, Math.round(Math.max(10_000, Math.min(180_000, left() - 90_000))));
      const seconds = (Date.now() - w0) / 1000;
      hubRollout.push(((hubCpu() - h0) / seconds) * 100);
      hubCpuSeconds.push(hubCpu() - h0);
      pgPerCommit.push((await hubTransactions()) - pg0);
      swarmRollout.push(((swarmCpu() - s0) / seconds) * 100);
      hubRss.push(procMemory(stack.hub.pid).rssMB);
      answered.push(...r.answered);
      bundles.push(...r.bundles);
      reported.push(...r.reported);
      synced.push(r.synced);
      benchQueries += 3;
      const path = await commitPath(stack, db, revision, w0, webhookAnswered, r);
      for (const st of path) {
        const acc = pathStages.get(st.stage) ?? { ...st, samples: [] };
        acc.samples.push(...st.samples);
        pathStages.set(st.stage, acc);
      }
      ctx.progress(
        `commit ${k} path (ms after the webhook): ` +
          path.map((st) => `${st.stage} ${st.samples.map((x) => x.toFixed(0)).join('/')}`).join(' | '),
      );
      ctx.progress(
        `commit ${k}: every long-poll answered ${Math.max(...r.answered)} ms, bundles held ${Math.max(...r.bundles)} ms, ` +
          `reports acknowledged ${Math.max(...r.reported)} ms, hub Synced ${r.synced} ms; hub ${hubRollout.at(-1)?.toFixed(0)} % swarm ${swarmRollout.at(-1)?.toFixed(0)} %; hub ${hubCpuSeconds.at(-1)?.toFixed(1)} CPU s, ${pgPerCommit.at(-1)} PostgreSQL transactions`,
      );
      await sleep(1_000);
    }

    // Report ingest at capacity: every client posts its sync + health reports at once, three times.
    const [hb0, sb0] = [hubCpu(), swarmCpu()];
    const bursts = await Promise.all(shards.map((s) => s.burst(ctx.quick ? 1 : 3)));
    const ingest = ingestRates(bursts);
    const burstSeconds = ingest.spanMs / 1000;
    ctx.progress(
      `ingest: ${ingest.rates.map((r) => r.toFixed(0)).join(', ')} reports/s; replay ${ingest.replay.duplicates}/${ingest.replay.sent} duplicates, ${ingest.replay.accepted} accepted`,
    );
    if (ingest.replay.accepted !== 0 || ingest.lost > 0)
      throw new Error(
        `report ingest lost or doubled reports: ${ingest.lost} not accepted, ${ingest.replay.accepted} replays accepted`,
      );

    // Floors, measured in the same run.
    const sizes = await db.query<{ n: number }>(
      `SELECT octet_length(manifests::text)::int AS n FROM "Bundle" WHERE revision = $1 LIMIT 1`,
      [revision],
    );
    const fanOutFloor = await bareFanOut(shards, count, hubCore, 300 * shape.apps, ctx.progress);
    const selectFloor = await bareBundleSelects(db, revision);
    const insertFloor = await bareInsert(stack, 20_000);
    const calls = await Promise.all(shards.map((s) => s.calls()));
    const callSummary = Object.entries(
      calls.reduce<Record<string, number>>((all, c) => {
        for (const [k, n] of Object.entries(c)) all[k] = (all[k] ?? 0) + n;
        return all;
      }, {}),
    )
      .sort()
      .map(([k, n]) => `${k}: ${n}`)
      .join(', ');

    const pinNote = pinned
      ? 'hub pinned to core 0 (taskset), the swarm shards and the bench to core 1; PostgreSQL and Redis not pinned'
      : 'one core: hub and swarm share it (not pinned)';
    const cpuNote = (hub: number[], swarm: number[]): string =>
      `hub ${median(hub).toFixed(0)} % of its core, swarm ${median(swarm).toFixed(0)} % of its core (median over the commits); ${pinNote}`;
    const target = (t: Target): { target?: Target } => (judged ? { target: t } : {});
    const figures: Figure[] = [
      figure({
        id: `swarm.webhook-to-answered.${count}`,
        bench,
        title: `webhook → every long-poll answered with the commit, ${count} clusters × ${shape.apps} apps (per client)`,
        unit: 'ms',
        fleetSize: count,
        samples: answered,
        ...target(TARGETS.answered),
        floor: {
          what: `a bare Node server on the hub's core answering ${count} held GETs at once`,
          samples: [fanOutFloor],
        },
        notes: `${synced.length} commits × ${count} clients, first 200 of GET assignments after the webhook; ${cpuNote(hubRollout, swarmRollout)}`,
        command: COMMAND,
      }),
      figure({
        id: `swarm.webhook-to-bundles.${count}`,
        bench,
        title: `webhook → every client holds its new bundles, ${count} clusters (per client)`,
        unit: 'ms',
        fleetSize: count,
        samples: bundles,
        ...target(TARGETS.bundles),
        floor: {
          what: `the bare fan-out plus a bare SELECT of each of the ${shape.apps} new bundles (one read per digest)`,
          samples: [fanOutFloor + selectFloor],
        },
        notes: `bundles fetched with POST bundles/batch and verified against their digest; ${cpuNote(hubRollout, swarmRollout)}`,
        command: COMMAND,
      }),
      figure({
        id: `swarm.webhook-to-synced.${count}`,
        bench,
        title: `webhook → the hub reports all ${count * shape.apps} targets Synced, ${count} clusters`,
        unit: 'ms',
        fleetSize: count,
        samples: synced,
        ...target(TARGETS.synced),
        notes: `one sample per commit, from the hub's Target rows; every client's reports acknowledged after ${Math.max(...reported)} ms at the latest (median ${median(reported).toFixed(0)} ms); ${cpuNote(hubRollout, swarmRollout)}`,
        command: COMMAND,
      }),
      figure({
        id: `swarm.report-ingest.${count}`,
        bench,
        title: `report ingest capacity: ${count} clients post a sync and a health report per target at once (reports/s)`,
        unit: 'reports/s',
        fleetSize: count,
        samples: ingest.rates,
        ...target(TARGETS.ingest),
        floor: {
          what: 'a bare batched INSERT of the same report, sync run and audit rows (up to 20,000 each)',
          samples: [insertFloor],
        },
        notes: `one sample per round of ${ingest.perRound} reports; ${ingest.failedPosts} POSTs failed and were sent again unchanged; the first round sent again: ${ingest.replay.duplicates} of ${ingest.replay.sent} counted as duplicates, ${ingest.replay.accepted} accepted; hub ${(((hubCpu() - hb0) / burstSeconds) * 100).toFixed(0)} %, swarm ${(((swarmCpu() - sb0) / burstSeconds) * 100).toFixed(0)} % of a core; ${pinNote}`,
        command: COMMAND,
      }),
      figure({
        id: `swarm.hub-idle-cpu.${count}`,
        bench,
        title: `idle hub CPU with ${count} long-polling clients`,
        unit: '% of a core',
        fleetSize: count,
        samples: idle.map((s) => s.cpuPercent),
        ...(count >= 10_000 ? { target: TARGETS.idleCpu } : {}),
        notes: `${idleMs / 1000} s in 10 slices; over the window hub ${hubIdlePct.toFixed(1)} %, swarm ${swarmIdlePct.toFixed(1)} % of a core; hub RSS ${idle.at(-1)?.rssMB.toFixed(0)} MB; ${pinNote}`,
        command: COMMAND,
      }),
      figure({
        id: `swarm.long-polling.${count}`,
        bench,
        title: `clients holding a long-poll after the idle window, ${count} clusters`,
        unit: '% of clusters',
        fleetSize: count,
        samples: [Math.min(...polling)],
        ...(judged
          ? {
              target: {
                on: 'median' as const,
                op: '>' as const,
                value: count >= 10_000 ? 99.89 : 98.99,
                text: count >= 10_000 ? '≥ 99.9 % polling' : '≥ 99 % polling',
              },
            }
          : {}),
        notes: `fewest of 5 reads of flotilla_agent_long_polls: ${polling.map((p) => p.toFixed(1)).join(', ')} %`,
        command: COMMAND,
      }),
      figure({
        id: `swarm.cold.${count}`,
        bench,
        title: `cold: appset POST → the hub reports all ${count * shape.apps} targets Synced, ${count} clusters`,
        unit: 'ms',
        fleetSize: count,
        samples: [cold.synced],
        notes: `every long-poll answered after ${Math.max(...cold.answered)} ms, every client held its bundles after ${Math.max(...cold.bundles)} ms; startup (registration, every client long-polling) ${startupMs.toFixed(0)} ms`,
        command: COMMAND,
      }),
      figure({
        id: `swarm.hub-rollout-cpu.${count}`,
        bench,
        title: `hub and swarm CPU during a rollout (webhook → all Synced), ${count} clusters`,
        unit: '% of a core',
        fleetSize: count,
        samples: hubRollout,
        notes: `hub per commit ${hubRollout.map((x) => x.toFixed(0)).join(', ')} % (${hubCpuSeconds.map((x) => x.toFixed(1)).join(', ')} CPU s; PostgreSQL transactions ${pgPerCommit.join(', ')}, the bench's own left out); swarm ${swarmRollout.map((x) => x.toFixed(0)).join(', ')} % of its core; hub RSS ${hubRss.map((x) => x.toFixed(0)).join(', ')} MB; bundle JSON ${sizes.rows[0]?.n ?? '?'} bytes`,
        command: COMMAND,
      }),
    ];
    const steps = [...pathStages.values()];
    for (const [i, st] of steps.entries()) {
      figures.push(
        figure({
          id: `swarm.path-${String(i + 1).padStart(2, '0')}.${count}`,
          bench,
          title: `commit path, swarm of ${count} clusters, step ${i + 1}: ${st.stage} (ms after the webhook)`,
          unit: 'ms',
          fleetSize: count,
          samples: st.samples,
          notes: `${st.how}; over ${synced.length} commits`,
          command: COMMAND,
        }),
      );
    }
    return {
      figures,
      series: [],
      remarks: [
        `swarm (${count} clusters): where a commit's seconds went (median over the commits, ms after the webhook): ` +
          steps.map((st) => `${st.stage} ${median(st.samples).toFixed(0)}`).join(', ') +
          '.',
        ...capped.map((c) => `swarm (${count} clusters): ${c}; recorded at the cap`),
        `swarm (${count} clusters): the clients' calls were answered ${callSummary}.`,
      ],
    };
  } finally {
    await Promise.all(shards.map((s) => s.stop()));
    await db.end().catch(() => undefined);
    // A profiled hub writes its profile on exit: give it the time to (past the usual 5 s grace).
    if (process.env['FLOTILLA_BENCH_CPU_PROFILE']) await stack.supervisor.stop(stack.hub, 60_000);
    await stack.stop();
  }
};

/** Reports per second of each burst round (all shards together), and the replay's counts. */
function ingestRates(bursts: BurstResult[]) {
  const rounds = bursts[0]?.rounds.length ?? 0;
  const rates: number[] = [];
  let lost = 0;
  let perRound = 0;
  let span = 0;
  for (let r = 0; r < rounds; r++) {
    const all = bursts.map((b) => b.rounds[r]).filter((x) => x !== undefined);
    const sent = all.reduce((n, x) => n + x.sent, 0);
    lost += sent - all.reduce((n, x) => n + x.accepted + x.storedBeforeRetry, 0);
    perRound = sent;
    const ms = Math.max(...all.map((x) => x.endedAt)) - Math.min(...all.map((x) => x.startedAt));
    span += ms;
    rates.push((sent / Math.max(1, ms)) * 1000);
  }
  const replay = bursts.reduce(
    (n, b) => ({
      sent: n.sent + b.replay.sent,
      accepted: n.accepted + b.replay.accepted,
      duplicates: n.duplicates + b.replay.duplicates,
    }),
    { sent: 0, accepted: 0, duplicates: 0 },
  );
  const failedPosts = bursts.reduce((n, b) => n + b.failedPosts, 0);
  return { rates, lost, perRound, replay, spanMs: span, failedPosts };
}

/**
 * The fan-out floor: the same clients each hold a GET on a bare Node server (bare-long-poll.ts) on
 * the hub's core, which answers them all at once with a body of `bodyBytes`; ms from the release
 * until the last client has its answer.
 */
async function bareFanOut(
  shards: SwarmShard[],
  count: number,
  core: string | undefined,
  bodyBytes: number,
  progress: (line: string) => void,
): Promise<number> {
  const script = fileURLToPath(new URL('../bare-long-poll.js', import.meta.url));
  const args = [script, String(bodyBytes)];
  const child =
    core === undefined
      ? spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] })
      : spawn('taskset', ['-c', core, process.execPath, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
  const forget = onStop(() => {
    child.kill('SIGKILL');
    return Promise.resolve();
  });
  try {
    const port = await new Promise<number>((resolve, reject) => {
      child.stdout?.once('data', (d: Buffer) => resolve(Number(d.toString().trim())));
      child.once('exit', (code) => reject(new Error(`the bare long-poll server exited (${code})`)));
    });
    const url = `http://127.0.0.1:${port}`;
    const answers = Promise.all(shards.map((s) => s.floor(`${url}/poll`)));
    await waitFor(
      `${count} GETs held by the bare server`,
      async () => (Number(await (await fetch(`${url}/held`)).text()) >= count ? true : undefined),
      { timeoutMs: 60_000, intervalMs: 100 },
    );
    const t0 = Date.now();
    await fetch(`${url}/release`, { method: 'POST' });
    const last = Math.max(...(await answers).flat()) - t0;
    progress(`floor: a bare server answered ${count} held GETs in ${last} ms`);
    return last;
  } finally {
    forget();
    child.kill('SIGTERM');
  }
}

/** A bare SELECT of each bundle of `revision` by digest, one after another: ms in all. */
async function bareBundleSelects(db: pg.Client, revision: string): Promise<number> {
  const digests = (
    await db.query<{ digest: string }>('SELECT digest FROM "Bundle" WHERE revision = $1', [revision])
  ).rows;
  const t0 = performance.now();
  for (const { digest } of digests)
    await db.query('SELECT manifests FROM "Bundle" WHERE digest = $1', [digest]);
  return performance.now() - t0;
}

/**
 * One commit's path through the hub and the swarm, in the order it happens (ms after the webhook):
 * the webhook answered, the fetch and expansion jobs, the hub's rows (fetched, expanded, released;
 * the same steps as the fleet bench's path), then the first and the last client answered and
 * holding its bundles. Three queries on `db`.
 */
async function commitPath(
  stack: HubStack,
  db: pg.Client,
  revision: string,
  t0: number,
  webhookAnswered: number,
  r: { answered: number[]; bundles: number[] },
): Promise<PathStage[]> {
  const q = async <R extends pg.QueryResultRow>(sql: string, params: unknown[]): Promise<R[]> =>
    (await db.query<R>(sql, params)).rows;
  const client = (stage: string, xs: number[], pick: 'first' | 'last', how: string): PathStage => ({
    stage: `${pick} client ${stage}`,
    samples: xs.length ? [pick === 'first' ? Math.min(...xs) : Math.max(...xs)] : [],
    how,
  });
  const stages = [
    { stage: 'webhook answered (202)', samples: [webhookAnswered], how: "the bench's POST returned" },
    ...(await queueSteps(stack.redisUrl, stack.redisPrefix, t0)),
    ...(await hubCommitSteps(q, revision, t0)),
    client('long-poll answered', r.answered, 'first', 'first 200 of GET assignments, earliest client'),
    client('long-poll answered', r.answered, 'last', 'first 200 of GET assignments, latest client'),
    client('held its bundles', r.bundles, 'first', 'bundles verified, earliest client'),
    client('held its bundles', r.bundles, 'last', 'bundles verified, latest client'),
  ];
  return stages
    .filter((st) => st.samples.length > 0)
    .sort((a, b) => (a.samples[0] ?? 0) - (b.samples[0] ?? 0));
}
