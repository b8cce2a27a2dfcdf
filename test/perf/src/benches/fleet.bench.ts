import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import pg from 'pg';
import { waitFor } from '@flotilla/cli/fleet';
import { watchConfigMaps } from '../config-map-watch.js';
import { commitPath, type PathStage } from '../fleet-trace.js';
import { FleetShard } from '../fleet-shard.js';
import { appName, fleetAppSet, type AppShape } from '../app-repo.js';
import { HubStack } from '../hub-stack.js';
import { inBatches } from '../shard-process.js';
import { procCpuSeconds, procMemory, sampleIdle } from '../proc-stats.js';
import { figure, summarize } from '../stats.js';
import { type BenchFn, type Figure } from '../types.js';

const COMMAND = 'npm run bench -- --only fleet';

const median = (samples: number[]): number => summarize(samples).median;
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Clusters registered through the hub API at once (POST /api/v1/clusters), as a script would, and
 * agents started at once across all shard processes (each registers with its bootstrap token).
 */
const REGISTER_IN_FLIGHT = 16;
/** Simulated clusters + agents a shard process may hold, and the most shard processes. */
const SHARD_CLUSTERS = 25;
const MAX_SHARDS = 4;
/** What "one hub holds the fleet" asks at idle (the judgement figure `fleet.hub-holds`). */
const HOLDS_IDLE_CPU = 25;
const HOLDS_LONG_POLLS = 99;

/**
 * A whole fleet on one machine: the real hub process on PostgreSQL and Redis, N simulated
 * clusters, and N agents run through `startAgent` in up to 4 shard processes (fleet-shard.ts;
 * each agent with its own identity, credential, state dir and long-poll). Commits arrive by signed
 * push webhook. Measures startup (registration, agents up and long-polling, the bench's own RSS), cold
 * convergence, commit → converged per cluster (seen on a watch of each cluster), the hub's idle cost
 * per cluster (RSS, CPU, Redis commands, PostgreSQL transactions) and the agents' long-polls held
 * open, and per rollout the hub's CPU and RSS, the reports stored per second and the Redis commands
 * and PostgreSQL transactions it took.
 */
export const fleetBench: BenchFn = async (ctx) => {
  const count = ctx.params['clusters'] ?? 10;
  const shape: AppShape = { apps: 10, deployments: 1, services: 1, configMaps: 1 };
  const bench = 'fleet';
  // The runner stops this job by PID at `limitSeconds` (run.ts); finish inside that with figures
  // rather than be stopped without any: phases shrink their waits to what is left, and a wait that
  // runs out is recorded as a sample at its cap (a missed target), not as a hang. Stopping N agents
  // and clusters, the hub and the database takes the last part of the limit.
  const started = performance.now();
  const limitMs = (ctx.params['limitSeconds'] ?? (count >= 100 ? 12 * 60 : 5 * 60)) * 1000;
  const teardownMs = count >= 100 ? 45_000 + 60 * count : 30_000;
  const budgetMs = limitMs - teardownMs;
  const left = (): number => budgetMs - (performance.now() - started);
  const capped: string[] = [];
  /** Waits for `check` up to `capMs`; false (and noted) when the cap ran out first. */
  const within = async (
    what: string,
    check: () => Promise<true | undefined>,
    capMs: number,
  ): Promise<boolean> => {
    try {
      await waitFor(what, check, { timeoutMs: Math.max(1_000, capMs), intervalMs: 250 });
      return true;
    } catch {
      capped.push(`${what}: not within ${(capMs / 1000).toFixed(0)} s`);
      return false;
    }
  };
  // A private redis-server, so INFO commandstats counts this hub's commands and nobody else's.
  const stack = await HubStack.start(shape, ctx.progress, { privateRedis: true });
  const watches: { stop(): void }[] = [];
  const shards: FleetShard[] = [];
  // Agents and their simulated clusters run in shard processes, 25 clusters a shard up to 4 shards
  // (250 clusters each at 1,000; see fleet-shard.ts); this process keeps the hub calls, the watches
  // and the clock.
  const shardCount = Math.min(MAX_SHARDS, Math.ceil(count / SHARD_CLUSTERS));
  // The bench's own reads of the hub's database, on one connection; counted, so that the
  // PostgreSQL load figures can leave them out.
  const db = new pg.Client({ connectionString: stack.databaseUrl });
  let benchQueries = 0;
  const query = async <R extends pg.QueryResultRow>(sql: string, params: unknown[] = []): Promise<R[]> => {
    benchQueries++;
    return (await db.query<R>(sql, params)).rows;
  };
  /** Transactions of the hub's database, less the bench's own queries. */
  const hubTransactions = async (): Promise<number> => (await stack.pgTransactions()) - benchQueries;
  /** Every agent → hub request answered since `since`, for the breakdown of each commit's path. */
  const agentCalls = async (since: number) => (await Promise.all(shards.map((s) => s.trace(since)))).flat();
  try {
    await db.connect();
    await sleep(2_000);
    const hubBaseline = procMemory(stack.hub.pid).rssMB;
    /** RSS of the bench: this process and its shard processes (peak: the sum of their peaks). */
    const benchMemory = (): { rssMB: number; peakMB: number } =>
      [process.pid, ...shards.map((s) => s.pid)].reduce(
        (sum, pid) => {
          const m = procMemory(pid);
          return { rssMB: sum.rssMB + m.rssMB, peakMB: sum.peakMB + m.peakMB };
        },
        { rssMB: 0, peakMB: 0 },
      );
    const benchRss0 = benchMemory().rssMB;

    // Startup: every cluster registered through the API (a bounded number at once), then the shards
    // start their simulated clusters and agents side by side (each agent trades its bootstrap token
    // for a credential of its own and starts its long-poll), until every agent holds a long-poll.
    const tRegister = performance.now();
    const names = Array.from({ length: count }, (_, i) => `f-${i + 1}`);
    const registered = await inBatches(names, REGISTER_IN_FLIGHT, async (name) => ({
      name,
      bootstrapToken: (await stack.api.registerCluster(name)).bootstrapToken,
    }));
    const registerMs = performance.now() - tRegister;
    ctx.progress(`${count} clusters registered in ${(registerMs / 1000).toFixed(1)} s`);
    const tAgents = performance.now();
    const perShard = Math.ceil(count / shardCount);
    const shardStarts = await Promise.allSettled(
      Array.from({ length: Math.ceil(count / perShard) }, (_, k) =>
        FleetShard.start({
          hubUrl: stack.hubUrl,
          workDir: stack.workDir,
          clusters: registered.slice(k * perShard, (k + 1) * perShard),
          startInFlight: Math.ceil(REGISTER_IN_FLIGHT / shardCount),
        }),
      ),
    );
    for (const r of shardStarts) if (r.status === 'fulfilled') shards.push(r.value);
    const failed = shardStarts.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
    const clusters = shards.flatMap((s) => s.clusters);
    const shardsMs = performance.now() - tAgents;
    const longPolls = async (): Promise<number> =>
      (await stack.hubMetric('flotilla_agent_long_polls')) ?? NaN;
    await within(
      `every agent to hold a long-poll on the hub (flotilla_agent_long_polls = ${count})`,
      async () => ((await longPolls()) >= count ? true : undefined),
      Math.min(120_000, left() / 3),
    );
    const agentsMs = performance.now() - tAgents;
    const benchRssUp = benchMemory().rssMB;
    ctx.progress(
      `${count} agents and clusters running in ${shards.length} shard process(es) after ${(shardsMs / 1000).toFixed(1)} s, ` +
        `${await longPolls()} long-polls held after ${(agentsMs / 1000).toFixed(1)} s; bench RSS ${benchRssUp.toFixed(0)} MB`,
    );

    // Each cluster's ConfigMaps watched: a cluster has converged on a release when every app's
    // ConfigMap carries it.
    const releaseOf = clusters.map(() => new Map<string, string>());
    let onEvent: ((i: number) => void) | undefined;
    watches.push(
      ...(await inBatches([...clusters.entries()], 50, async ([i, sim]) => {
        const kc = new KubeConfig();
        kc.loadFromString(sim.kubeconfig);
        return watchConfigMaps(
          kc,
          (obj) => {
            if (obj.metadata?.name !== 'settings-0' || !obj.metadata.namespace) return;
            releaseOf[i]?.set(obj.metadata.namespace, obj.data?.['release'] ?? '');
            onEvent?.(i);
          },
          { name: 'settings-0', resume: true },
        );
      })),
    );
    const convergedOn = (i: number, release: string): boolean => {
      const m = releaseOf[i];
      if (!m) return false;
      for (let a = 0; a < shape.apps; a++) if (m.get(appName(a)) !== release) return false;
      return true;
    };
    /** Resolves with each cluster's time (ms after t0) to carry `release` everywhere. */
    const clusterTimes = (release: string, t0: number, timeoutMs: number): Promise<(number | null)[]> =>
      new Promise((resolve) => {
        const times: (number | null)[] = clusters.map(() => null);
        let pending = clusters.length;
        // An event only changes its own cluster: check that one (10,000 events a commit at 1,000).
        const check = (i: number): void => {
          if (times[i] !== null || !convergedOn(i, release)) return;
          times[i] = performance.now() - t0;
          if (--pending === 0) done();
        };
        const timer = setTimeout(() => done(), timeoutMs);
        const ticker = setInterval(() => {
          const n = times.filter((t) => t !== null).length;
          const apps = releaseOf.reduce(
            (sum, m) => sum + [...m.values()].filter((r) => r === release).length,
            0,
          );
          ctx.progress(
            `${n}/${clusters.length} clusters on ${release} (${apps}/${clusters.length * shape.apps} apps)`,
          );
        }, 10_000);
        const done = (): void => {
          clearTimeout(timer);
          clearInterval(ticker);
          onEvent = undefined;
          resolve(times);
        };
        onEvent = check;
        for (let i = 0; i < clusters.length; i++) check(i);
        if (clusters.length === 0) done();
      });

    // Every target Synced at `revision`, as GET /api/v1/targets derives it (targets/sync-status.ts),
    // read from the hub's rows: polling the API would make the hub serialise every target (10,000
    // at 1,000 clusters) four times a second and count that against its rollout CPU.
    const hubAllSynced = (revision: string) => async (): Promise<true | undefined> => {
      const [r] = await query<{ total: number; synced: number }>(
        `SELECT count(*)::int AS total,
                count(*) FILTER (WHERE "lastSyncedAt" IS NOT NULL AND "desiredRevision" = $1
                  AND "lastSyncedRevision" = "desiredRevision"
                  AND "lastSyncedDigest" IS NOT DISTINCT FROM "bundleDigest")::int AS synced
           FROM "Target"`,
        [revision],
      );
      return r && r.total === count * shape.apps && r.synced === r.total ? true : undefined;
    };

    /** Agent reports the hub has stored so far (one row per report id). */
    const storedReports = async (): Promise<number> =>
      Number((await query<{ n: string }>('SELECT count(*)::text AS n FROM "ProcessedReport"'))[0]?.n ?? 0);

    // Cold fleet.
    await stack.addRepository();
    let revision = (await stack.repo.git.revparse(['HEAD'])).trim();
    const coldReports0 = await storedReports();
    const tCold = performance.now();
    // What the idle sample, one commit and the figures need after the cold fleet.
    const afterCold = count >= 100 ? 180_000 : 120_000;
    // At 1,000 clusters a commit is as much work as the cold fleet: neither may take more than half.
    const coldCapMs = Math.max(30_000, Math.min(600_000, left() - afterCold, (left() - 60_000) / 2));
    const coldClusters = clusterTimes('r0', tCold, coldCapMs);
    await stack.api.createAppSet(fleetAppSet('bench', stack.repoUrl));
    const coldTimes = await coldClusters;
    const coldObjectsMs = performance.now() - tCold;
    await within(
      'cold fleet: the hub to report every target Synced',
      hubAllSynced(revision),
      Math.max(15_000, Math.min(60_000, (left() - 120_000) / 4)),
    );
    const coldHubMs = performance.now() - tCold;
    const coldReports = (await storedReports()) - coldReports0;
    ctx.progress(
      `cold fleet: objects everywhere after ${coldObjectsMs.toFixed(0)} ms, hub all Synced after ${coldHubMs.toFixed(0)} ms`,
    );

    // Idle: one 30 s window is one long-poll cycle of every agent (each re-polls every 30 s), so
    // every size counts each agent's idle traffic about once. Nothing of the bench's touches the hub,
    // its Redis or its database inside the window; its long-polls are counted on /metrics after it.
    await sleep(5_000);
    const idleMs = ctx.quick ? 5_000 : 30_000;
    const [idleRedis0, idlePg0] = [await stack.redisCommands(), await hubTransactions()];
    const idleCpu0 = procCpuSeconds(stack.hub.pid);
    const idleT0 = performance.now();
    const idle = await sampleIdle(stack.hub.pid, idleMs, 10);
    // The whole window's CPU (the slices are a few clock ticks each at small sizes).
    const idleCpuWindow =
      ((procCpuSeconds(stack.hub.pid) - idleCpu0) / ((performance.now() - idleT0) / 1000)) * 100;
    const idleRedisPerSec = ((await stack.redisCommands()) - idleRedis0) / (idleMs / 1000);
    const idlePgPerSec = ((await hubTransactions()) - idlePg0) / (idleMs / 1000);
    const idleLongPolls: number[] = [];
    for (let k = 0; k < 5; k++) {
      if (k > 0) await sleep(500);
      idleLongPolls.push(await longPolls());
    }
    const benchRss = benchMemory();
    ctx.progress(
      `hub idle: RSS ${idle[idle.length - 1]?.rssMB.toFixed(0)} MB, CPU ${median(idle.map((x) => x.cpuPercent)).toFixed(1)} % of a core, ` +
        `Redis ${idleRedisPerSec.toFixed(1)} commands/s, PostgreSQL ${idlePgPerSec.toFixed(1)} transactions/s, ` +
        `long-polls held ${idleLongPolls.join(', ')}; bench processes' RSS ${benchRss.rssMB.toFixed(0)} MB`,
    );

    // Commits.
    const commits = ctx.quick ? 2 : count >= 1000 ? 2 : count >= 100 ? 3 : 5;
    /** The longest a commit may take to reach every cluster before its stragglers count at the cap. */
    const commitCapMax = count >= 1000 ? 300_000 : 120_000;
    const perCluster: number[] = [];
    const allClusters: number[] = [];
    const hubSynced: number[] = [];
    const fetchFloor: number[] = [];
    // Per commit, from the webhook until the hub reports every target Synced at it.
    const rolloutCpu: number[] = [];
    const rolloutCpuMsPerCluster: number[] = [];
    // The agents' side of a commit: the shard processes' CPU (agents and their simulated API servers
    // together) from the webhook until the last cluster converged, per cluster.
    const shardCpuMsPerCluster: number[] = [];
    const rolloutRss: number[] = [];
    const ingestRate: number[] = [];
    const redisPerCommit: number[] = [];
    const pgPerCommit: number[] = [];
    const mirror = join(stack.workDir, 'floor-mirror.git');
    execFileSync('git', ['clone', '--quiet', '--mirror', stack.repoUrl, mirror]);
    const pathStages: PathStage[] = [];
    const pathCalls: Record<string, number> = {};
    let storedDuringCommits = 0;
    let missing = 0;
    let commitCapMs = 120_000;
    let done = 0;
    for (let k = 1; k <= commits; k++) {
      // A further commit only when one as long as the last fits; the first runs on whatever is left.
      const lastMs = hubSynced[hubSynced.length - 1] ?? 0;
      if (k > 1 && left() < Math.max(180_000, lastMs * 1.3 + 60_000)) {
        capped.push(`only ${done} of ${commits} commits fitted the job's time limit`);
        break;
      }
      commitCapMs = Math.max(10_000, Math.min(commitCapMax, left() - 90_000));
      const release = `r${k}`;
      revision = await stack.repo.commitRelease(release);
      const f0 = performance.now();
      execFileSync('git', ['-C', mirror, 'fetch', '--quiet', '--prune', 'origin']);
      fetchFloor.push(performance.now() - f0);
      const [reports0, redis0, pg0] = [
        await storedReports(),
        await stack.redisCommands(),
        await hubTransactions(),
      ];
      const cpu0 = procCpuSeconds(stack.hub.pid);
      const shardCpu = (): number => shards.reduce((sum, s) => sum + procCpuSeconds(s.pid), 0);
      const shardCpu0 = shardCpu();
      for (const s of shards) s.forget(Date.now());
      const wall0 = Date.now();
      const rssTimer = setInterval(() => rolloutRss.push(procMemory(stack.hub.pid).rssMB), 500);
      const t0 = performance.now();
      const times = clusterTimes(release, t0, commitCapMs);
      await stack.pushWebhook(revision);
      const got = await times;
      shardCpuMsPerCluster.push(((shardCpu() - shardCpu0) * 1000) / count);
      for (const t of got) {
        if (t === null) missing++;
        else perCluster.push(t);
      }
      const worst = Math.max(...got.map((t) => t ?? commitCapMs));
      allClusters.push(worst);
      await within(
        `commit ${k}: the hub to report it Synced everywhere`,
        hubAllSynced(revision),
        Math.min(commitCapMax, left() - 60_000),
      );
      done++;
      const rolloutMs = performance.now() - t0;
      hubSynced.push(rolloutMs);
      clearInterval(rssTimer);
      const cpuSeconds = procCpuSeconds(stack.hub.pid) - cpu0;
      rolloutCpu.push((cpuSeconds / (rolloutMs / 1000)) * 100);
      rolloutCpuMsPerCluster.push((cpuSeconds * 1000) / count);
      const storedNow = (await storedReports()) - reports0;
      storedDuringCommits += storedNow;
      ingestRate.push(storedNow / (rolloutMs / 1000));
      redisPerCommit.push((await stack.redisCommands()) - redis0);
      pgPerCommit.push((await hubTransactions()) - pg0);
      const calls = await agentCalls(wall0);
      const path = await commitPath(
        query,
        calls,
        revision,
        wall0,
        got.filter((t): t is number => t !== null),
      );
      for (const [i, st] of path.stages.entries()) {
        const acc = (pathStages[i] ??= { ...st, samples: [] });
        acc.samples.push(...st.samples);
      }
      for (const [key, n] of Object.entries(path.status)) pathCalls[key] = (pathCalls[key] ?? 0) + n;
      ctx.progress(
        `commit ${k} path (median ms after the webhook): ` +
          path.stages
            .map((st) => `${st.stage} ${st.samples.length ? median(st.samples).toFixed(0) : '-'}`)
            .join(' | ') +
          `; agent calls: ${JSON.stringify(path.status)}`,
      );
      ctx.progress(
        `commit ${k}/${commits}: last cluster converged after ${worst.toFixed(0)} ms; ` +
          `agents + simulated clusters burnt ${shardCpuMsPerCluster.at(-1)?.toFixed(0)} CPU ms per cluster until then`,
      );
      await sleep(1_000);
    }
    if (missing > 0) for (let i = 0; i < missing; i++) perCluster.push(commitCapMs);

    const hubRss = idle.map((s) => s.rssMB);
    const figures: Figure[] = [
      figure({
        id: `fleet.commit-to-converged.${count}`,
        bench,
        title: `commit + webhook → a cluster carries the commit on all ${shape.apps} apps (per cluster), ${count} clusters`,
        unit: 'ms',
        fleetSize: count,
        samples: perCluster,
        ...(count === 100
          ? {
              target: {
                on: 'p99' as const,
                op: '<' as const,
                value: 5_000,
                text: 'p99 < 5 s at 100 clusters',
              },
            }
          : {}),
        floor: { what: 'bare `git fetch` of the same commit from the same git daemon', samples: fetchFloor },
        notes:
          `${done} commits × ${count} clusters, seen on a watch of each cluster` +
          (missing
            ? `; ${missing} cluster-commits not converged within the wait (${(commitCapMs / 1000).toFixed(0)} s for the last commit) counted at the cap`
            : ''),
        command: COMMAND,
      }),
      figure({
        id: `fleet.commit-to-all-converged.${count}`,
        bench,
        title: `commit + webhook → the last of ${count} clusters converged`,
        unit: 'ms',
        fleetSize: count,
        samples: allClusters,
        command: COMMAND,
      }),
      figure({
        id: `fleet.commit-to-hub-synced.${count}`,
        bench,
        title: `commit + webhook → the hub reports all ${count * shape.apps} targets Synced at the commit`,
        unit: 'ms',
        fleetSize: count,
        samples: hubSynced,
        notes:
          "Synced as GET /api/v1/targets derives it, polled every 250 ms from the hub's Target rows (not through the API, which would add the serialisation of every target to the hub's CPU)",
        command: COMMAND,
      }),
      figure({
        id: `fleet.cold-converge.${count}`,
        bench,
        title: `cold fleet: appset POST → every object on all ${count} clusters (${count * shape.apps} targets)`,
        unit: 'ms',
        fleetSize: count,
        samples: coldTimes.map((t) => t ?? coldCapMs),
        notes: `per cluster; the hub reported all targets Synced after ${coldHubMs.toFixed(0)} ms, having stored ${coldReports} agent reports (${((coldReports * 1000) / coldHubMs).toFixed(0)} per second)`,
        command: COMMAND,
      }),
      figure({
        id: `fleet.hub-rollout-cpu.${count}`,
        bench,
        title: `hub CPU during a rollout (webhook → all Synced), ${count} clusters`,
        unit: '% of a core',
        fleetSize: count,
        samples: rolloutCpu,
        notes: `one sample per commit (${done})`,
        command: COMMAND,
      }),
      figure({
        id: `fleet.hub-rollout-cpu-per-cluster.${count}`,
        bench,
        title: `hub CPU time per cluster for one commit's rollout, ${count} clusters`,
        unit: 'ms',
        fleetSize: count,
        samples: rolloutCpuMsPerCluster,
        command: COMMAND,
      }),
      figure({
        id: `fleet.shard-commit-cpu-per-cluster.${count}`,
        bench,
        title: `agent + simulated cluster CPU time per cluster for one commit (webhook → last cluster converged), ${count} clusters`,
        unit: 'ms',
        fleetSize: count,
        samples: shardCpuMsPerCluster,
        notes:
          'the shard processes (each agent and its kube-sim share one) summed, ÷ clusters; one sample per commit; what the fleet side competes with the hub for on 2 cores',
        command: COMMAND,
      }),
      figure({
        id: `fleet.hub-rollout-rss.${count}`,
        bench,
        title: `hub RSS during rollouts, ${count} clusters`,
        unit: 'MB',
        fleetSize: count,
        samples: rolloutRss,
        notes: 'sampled every 500 ms while commits rolled out',
        command: COMMAND,
      }),
      figure({
        id: `fleet.report-ingest-rate.${count}`,
        bench,
        title: `agent reports stored per second during a rollout, ${count} clusters`,
        unit: 'reports/s',
        fleetSize: count,
        samples: ingestRate,
        notes:
          'new ProcessedReport rows ÷ webhook → all Synced; bounded by what the agents send, not a capacity test',
        command: COMMAND,
      }),
      figure({
        id: `fleet.redis-commands-per-commit.${count}`,
        bench,
        title: `Redis commands for one commit's rollout, ${count} clusters`,
        unit: 'commands',
        fleetSize: count,
        samples: redisPerCommit,
        notes: `INFO commandstats of the bench's private redis-server; idle: ${idleRedisPerSec.toFixed(1)} commands/s (${(idleRedisPerSec / count).toFixed(2)} per cluster)`,
        command: COMMAND,
      }),
      figure({
        id: `fleet.pg-transactions-per-commit.${count}`,
        bench,
        title: `PostgreSQL transactions for one commit's rollout, ${count} clusters`,
        unit: 'transactions',
        fleetSize: count,
        samples: pgPerCommit,
        notes: `pg_stat_database.xact_commit of the bench database (flushed by backends about once a second), less the bench's own queries; idle: ${idlePgPerSec.toFixed(1)} transactions/s`,
        command: COMMAND,
      }),
      figure({
        id: `fleet.hub-idle-rss.${count}`,
        bench,
        title: `hub RSS, idle, ${count} clusters connected (long-polling)`,
        unit: 'MB',
        fleetSize: count,
        samples: hubRss,
        notes: `hub RSS before any cluster: ${hubBaseline.toFixed(1)} MB`,
        command: COMMAND,
      }),
      figure({
        id: `fleet.hub-idle-rss-per-cluster.${count}`,
        bench,
        title: `hub RSS per idle cluster (above the hub before any cluster), ${count} clusters`,
        unit: 'kB',
        fleetSize: count,
        samples: hubRss.map((r) => ((r - hubBaseline) * 1000) / count),
        command: COMMAND,
      }),
      figure({
        id: `fleet.hub-idle-cpu.${count}`,
        bench,
        title: `hub CPU, idle, ${count} clusters connected`,
        unit: '% of a core',
        fleetSize: count,
        samples: idle.map((s) => s.cpuPercent),
        notes: `${idleMs / 1000} s in 10 slices; over the whole window ${idleCpuWindow.toFixed(2)} % of a core`,
        command: COMMAND,
      }),
      // Idle cost per cluster: the hub's whole idle cost over one window ÷ clusters, per minute (two
      // long-poll cycles of each agent); its fixed work (queues, sweeps) is spread over the clusters.
      figure({
        id: `fleet.hub-idle-cpu-per-cluster.${count}`,
        bench,
        title: `hub CPU per idle cluster (hub CPU ÷ clusters), ${count} clusters`,
        unit: 'CPU ms/min',
        fleetSize: count,
        samples: [(idleCpuWindow * 600) / count],
        notes: `one ${idleMs / 1000} s window (one long-poll cycle of every agent): ${idleCpuWindow.toFixed(2)} % of a core in all`,
        command: COMMAND,
      }),
      figure({
        id: `fleet.redis-idle-per-cluster.${count}`,
        bench,
        title: `Redis commands per idle cluster (hub's commands ÷ clusters), ${count} clusters`,
        unit: 'commands/min',
        fleetSize: count,
        samples: [(idleRedisPerSec * 60) / count],
        notes: `one ${idleMs / 1000} s window: ${idleRedisPerSec.toFixed(1)} commands/s in all`,
        command: COMMAND,
      }),
      figure({
        id: `fleet.pg-idle-per-cluster.${count}`,
        bench,
        title: `PostgreSQL transactions per idle cluster (hub's transactions ÷ clusters), ${count} clusters`,
        unit: 'transactions/min',
        fleetSize: count,
        samples: [(idlePgPerSec * 60) / count],
        notes: `one ${idleMs / 1000} s window, less the bench's own queries: ${idlePgPerSec.toFixed(1)} transactions/s in all`,
        command: COMMAND,
      }),
      figure({
        id: `fleet.long-polls.${count}`,
        bench,
        title: `agents holding a long-poll on the hub, idle, ${count} clusters`,
        unit: '% of clusters',
        fleetSize: count,
        samples: idleLongPolls.map((n) => (n * 100) / count),
        notes: `the hub's flotilla_agent_long_polls gauge (GET assignments in progress), read ${idleLongPolls.length} times after the idle window: ${idleLongPolls.join(', ')}`,
        command: COMMAND,
      }),
      figure({
        id: `fleet.startup-register.${count}`,
        bench,
        title: `startup: ${count} clusters registered through POST /api/v1/clusters, ${REGISTER_IN_FLIGHT} at once`,
        unit: 'ms',
        fleetSize: count,
        samples: [registerMs],
        command: COMMAND,
      }),
      figure({
        id: `fleet.startup-agents.${count}`,
        bench,
        title: `startup: ${count} simulated clusters and agents started → every agent holds a long-poll`,
        unit: 'ms',
        fleetSize: count,
        samples: [agentsMs],
        notes: `${shards.length} shard process(es) of up to ${perShard} clusters started side by side, each starting ${Math.ceil(REGISTER_IN_FLIGHT / shardCount)} cluster + agent pairs at a time; shards ready after ${shardsMs.toFixed(0)} ms`,
        command: COMMAND,
      }),
      figure({
        id: `fleet.bench-rss.${count}`,
        bench,
        title: `bench RSS (this process and ${shards.length} shard processes) with ${count} simulated clusters and agents, idle`,
        unit: 'MB',
        fleetSize: count,
        samples: [benchRss.rssMB],
        notes: `before any cluster ${benchRss0.toFixed(0)} MB, all agents up ${benchRssUp.toFixed(0)} MB, peak by the idle sample ${benchRss.peakMB.toFixed(0)} MB`,
        command: COMMAND,
      }),
    ];
    // The judgement "one hub on 2 cores holds the fleet", stated as its three conditions.
    const idleCpu = idleCpuWindow;
    const pollsHeld = Math.min(...idleLongPolls.map((n) => (n * 100) / count));
    const coldMissed = coldTimes.filter((t) => t === null).length;
    const holds =
      idleCpu < HOLDS_IDLE_CPU &&
      pollsHeld >= HOLDS_LONG_POLLS &&
      missing === 0 &&
      coldMissed === 0 &&
      done > 0;
    figures.push({
      ...figure({
        id: `fleet.hub-holds.${count}`,
        bench,
        title:
          `one hub on 2 cores holds ${count} clusters: idle hub CPU (% of one core) < ${HOLDS_IDLE_CPU} % ` +
          `while ≥ ${HOLDS_LONG_POLLS} % of the agents hold a long-poll, and the cold fleet and every commit reached every cluster`,
        unit: '% of a core',
        fleetSize: count,
        samples: [idleCpuWindow],
        ...(count >= 1000
          ? {
              target: {
                on: 'median' as const,
                op: '<' as const,
                value: HOLDS_IDLE_CPU,
                text: `1,000 clusters held: idle CPU < ${HOLDS_IDLE_CPU} % of a core, ≥ ${HOLDS_LONG_POLLS} % long-polling, every cluster converged`,
              },
            }
          : {}),
        notes:
          `idle CPU over one ${idleMs / 1000} s window ${idleCpu.toFixed(1)} % of a core; fewest long-polls held ${pollsHeld.toFixed(1)} % of clusters; ` +
          `cold fleet: ${coldMissed} clusters not converged within the wait; commits: ${done} of ${commits} run, ${missing} cluster-commits not converged within the wait`,
        command: COMMAND,
      }),
      ...(count >= 1000 ? { verdict: holds ? ('met' as const) : ('missed' as const) } : {}),
    });
    const callSummary = Object.entries(pathCalls)
      .sort()
      .map(([key, n]) => `${key}: ${n}`)
      .join(', ');
    for (const [i, st] of pathStages.entries()) {
      if (st.samples.length === 0) continue;
      figures.push(
        figure({
          id: `fleet.path-${String(i + 1).padStart(2, '0')}.${count}`,
          bench,
          title: `commit path, ${count} clusters, step ${i + 1}: ${st.stage} (ms after the webhook)`,
          unit: 'ms',
          fleetSize: count,
          samples: st.samples,
          notes:
            `${st.how}; over ${done} commits` +
            (i === pathStages.length - 1 ? `; agent → hub requests during the rollouts: ${callSummary}` : ''),
          command: COMMAND,
        }),
      );
    }
    /** One line: each step's median, and how the time splits between the hub and the agents. */
    const whereTheSecondsWent = (): string => {
      const at = (stage: string): number => {
        const st = pathStages.find((x) => x.stage === stage);
        return st && st.samples.length ? median(st.samples) / 1000 : NaN;
      };
      const steps = pathStages
        .filter((st) => st.samples.length > 0)
        .map((st) => `${st.stage} ${(median(st.samples) / 1000).toFixed(1)} s`)
        .join(', ');
      const answered = at('agent long-poll answered with the commit');
      const seen = at('objects seen on the cluster');
      const stored = at('hub stored the sync runs');
      const finished = at('agent finished applying');
      return (
        `fleet (${count} clusters): where a commit's seconds went (median per step, after the webhook): ${steps}. ` +
        `Webhook → long-poll answered (hub: fetch, expansion, release, wake-up): ${answered.toFixed(1)} s; ` +
        `answered → objects on the cluster (agent: bundles, apply): ${(seen - answered).toFixed(1)} s; ` +
        `apply finished → runs stored (report delivery and ingest): ${(stored - finished).toFixed(1)} s. ` +
        `Hub CPU during the rollouts: median ${med(`fleet.hub-rollout-cpu.${count}`).toFixed(0)} % of a core.`
      );
    };
    const med = (id: string): number => figures.find((f) => f.id === id)?.median ?? 0;
    const p99 = (id: string): number => figures.find((f) => f.id === id)?.p99 ?? 0;
    return {
      figures,
      series: [
        {
          chart: 'fleet-latency',
          name: 'commit → converged p99 (ms)',
          unit: 'ms',
          points: [{ x: count, y: p99(`fleet.commit-to-converged.${count}`) }],
        },
        {
          chart: 'fleet-latency',
          name: 'cold fleet p99 (ms)',
          unit: 'ms',
          points: [{ x: count, y: p99(`fleet.cold-converge.${count}`) }],
        },
        {
          chart: 'fleet-hub-rss',
          name: 'hub idle RSS (MB)',
          unit: 'MB',
          points: [{ x: count, y: med(`fleet.hub-idle-rss.${count}`) }],
        },
        {
          chart: 'fleet-hub-cpu',
          name: 'hub idle CPU (% of a core)',
          unit: '%',
          points: [{ x: count, y: med(`fleet.hub-idle-cpu.${count}`) }],
        },
        {
          chart: 'fleet-idle-rss-per-cluster',
          name: 'hub RSS per idle cluster (kB)',
          unit: 'kB',
          points: [{ x: count, y: med(`fleet.hub-idle-rss-per-cluster.${count}`) }],
        },
        {
          chart: 'fleet-idle-per-cluster',
          name: 'hub CPU per idle cluster (CPU ms/min)',
          unit: 'ms/min',
          points: [{ x: count, y: med(`fleet.hub-idle-cpu-per-cluster.${count}`) }],
        },
        {
          chart: 'fleet-idle-per-cluster',
          name: 'Redis commands per idle cluster (/min)',
          unit: '/min',
          points: [{ x: count, y: med(`fleet.redis-idle-per-cluster.${count}`) }],
        },
        {
          chart: 'fleet-idle-per-cluster',
          name: 'PostgreSQL transactions per idle cluster (/min)',
          unit: '/min',
          points: [{ x: count, y: med(`fleet.pg-idle-per-cluster.${count}`) }],
        },
        {
          chart: 'fleet-startup',
          name: 'clusters registered (s)',
          unit: 's',
          points: [{ x: count, y: registerMs / 1000 }],
        },
        {
          chart: 'fleet-startup',
          name: 'agents up, all long-polling (s)',
          unit: 's',
          points: [{ x: count, y: agentsMs / 1000 }],
        },
        {
          chart: 'fleet-bench-rss',
          name: 'bench RSS: simulated clusters + agents (MB)',
          unit: 'MB',
          points: [{ x: count, y: benchRss.rssMB }],
        },
        {
          chart: 'fleet-hub-cpu',
          name: 'hub CPU during a rollout (% of a core)',
          unit: '%',
          points: [{ x: count, y: med(`fleet.hub-rollout-cpu.${count}`) }],
        },
      ],
      remarks: [
        ...capped.map((c) => `fleet (${count} clusters): ${c}; recorded at the cap`),
        ...(coldMissed > 0
          ? [
              `fleet (${count} clusters): ${coldMissed} clusters had not converged on the cold fleet within its wait, so the idle sample and the first commit ran while they were still applying; their idle figures are not idle`,
            ]
          : []),
        ...(pathStages.length > 0 ? [whereTheSecondsWent()] : []),
        // Answers the question of a report count that did not grow while the hub said Synced.
        `fleet (${count} clusters): during the ${done} commits the agents' requests were answered ${callSummary} ` +
          `(${Object.entries(pathCalls)
            .filter(([key]) => / 429$/.test(key))
            .reduce(
              (n, [, v]) => n + v,
              0,
            )} rate-limited); the hub stored ${storedDuringCommits} agent reports (ProcessedReport rows).`,
      ],
    };
  } catch (err) {
    // Said before the teardown, which may take a while (or fail) with 1,000 agents to stop.
    ctx.progress(`failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    throw err;
  } finally {
    const tStop = performance.now();
    for (const w of watches) w.stop();
    await Promise.all(shards.map((s) => s.stop()));
    await db.end().catch(() => undefined);
    await stack.stop();
    ctx.progress(
      `stopped ${count} agents and clusters, the hub and its database in ${((performance.now() - tStop) / 1000).toFixed(1)} s ` +
        `(${((performance.now() - started) / 1000).toFixed(0)} s of the job's ${(limitMs / 1000).toFixed(0)} s)`,
    );
  }
};
