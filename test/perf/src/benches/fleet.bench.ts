import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { waitFor } from '@flotilla/cli/fleet';
import { watchConfigMaps } from '../config-map-watch.js';
import { commitPath, type PathStage } from '../fleet-trace.js';
import { FleetShard } from '../fleet-shard.js';
import { appName, fleetAppSet, type AppShape } from '../app-repo.js';
import { HubStack } from '../hub-stack.js';
import { procCpuSeconds, procMemory, sampleIdle } from '../proc-stats.js';
import { figure, summarize } from '../stats.js';
import { type BenchFn, type Figure } from '../types.js';

const COMMAND = 'npm run bench -- --only fleet';

const median = (samples: number[]): number => summarize(samples).median;

/**
 * A whole fleet on one machine: the real hub process on PostgreSQL and Redis, N simulated
 * clusters, and N agents run through `startAgent` on worker threads of this process (fleet-shard.ts;
 * each agent with its own identity, credential, state dir and long-poll). Commits arrive by signed push webhook. Measures cold
 * convergence, commit → converged per cluster (seen on a watch of each cluster), the hub's idle cost
 * per cluster, and per rollout the hub's CPU and RSS, the reports stored per second and the Redis
 * commands and PostgreSQL transactions it took.
 */
export const fleetBench: BenchFn = async (ctx) => {
  const count = ctx.params['clusters'] ?? 10;
  const shape: AppShape = { apps: 10, deployments: 1, services: 1, configMaps: 1 };
  const bench = 'fleet';
  // The runner stops this job by PID at 12 min (100+ clusters) or 5 min; finish inside that with
  // figures rather than be stopped without any: phases shrink their waits to what is left, and a wait
  // that runs out is recorded as a sample at its cap (a missed target), not as a hang.
  const started = performance.now();
  const budgetMs = (count >= 100 ? 11 : 4.5) * 60_000;
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
  // Agents and their simulated clusters run on worker threads, up to 25 clusters a thread (see
  // fleet-shard.ts); this thread keeps the hub calls, the watches and the clock.
  const shardCount = Math.min(4, Math.ceil(count / 25));
  /** Every agent → hub request answered since `since`, for the breakdown of each commit's path. */
  const agentCalls = async (since: number) => (await Promise.all(shards.map((s) => s.trace(since)))).flat();
  try {
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    const hubBaseline = procMemory(stack.hub.pid).rssMB;
    const names = Array.from({ length: count }, (_, i) => `f-${i + 1}`);
    const registered: { name: string; bootstrapToken: string }[] = [];
    for (const name of names)
      registered.push({ name, bootstrapToken: (await stack.api.registerCluster(name)).bootstrapToken });
    const perShard = Math.ceil(count / shardCount);
    for (let i = 0; i < count; i += perShard) {
      shards.push(
        await FleetShard.start({
          hubUrl: stack.hubUrl,
          workDir: stack.workDir,
          clusters: registered.slice(i, i + perShard),
        }),
      );
    }
    const clusters = shards.flatMap((s) => s.clusters);
    ctx.progress(`${count} clusters registered, their agents running on ${shards.length} worker thread(s)`);

    // Each cluster's ConfigMaps watched: a cluster has converged on a release when every app's
    // ConfigMap carries it.
    const releaseOf = clusters.map(() => new Map<string, string>());
    let onEvent: (() => void) | undefined;
    for (const [i, sim] of clusters.entries()) {
      const kc = new KubeConfig();
      kc.loadFromString(sim.kubeconfig);
      watches.push(
        await watchConfigMaps(kc, (obj) => {
          if (obj.metadata?.name !== 'settings-0' || !obj.metadata.namespace) return;
          releaseOf[i]?.set(obj.metadata.namespace, obj.data?.['release'] ?? '');
          onEvent?.();
        }),
      );
    }
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
        const check = (): void => {
          const now = performance.now() - t0;
          for (let i = 0; i < clusters.length; i++)
            if (times[i] === null && convergedOn(i, release)) times[i] = now;
          if (times.every((t) => t !== null)) done();
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
        check();
      });

    const hubAllSynced = (revision: string) => async (): Promise<true | undefined> => {
      const ts = await stack.api.targets();
      return ts.length === count * shape.apps &&
        ts.every((t) => t.syncStatus === 'Synced' && t.desiredRevision === revision)
        ? true
        : undefined;
    };

    /** Agent reports the hub has stored so far (one row per report id). */
    const storedReports = (): Promise<number> =>
      stack.sql(async (c) =>
        Number(
          (await c.query<{ n: string }>('SELECT count(*)::text AS n FROM "ProcessedReport"')).rows[0]?.n ?? 0,
        ),
      );

    // Cold fleet.
    await stack.addRepository();
    let revision = (await stack.repo.git.revparse(['HEAD'])).trim();
    const coldReports0 = await storedReports();
    const tCold = performance.now();
    const coldCapMs = Math.min(600_000, left() - 240_000);
    const coldClusters = clusterTimes('r0', tCold, coldCapMs);
    await stack.api.createAppSet(fleetAppSet('bench', stack.repoUrl));
    const coldTimes = await coldClusters;
    const coldObjectsMs = performance.now() - tCold;
    await within(
      'cold fleet: the hub to report every target Synced',
      hubAllSynced(revision),
      left() - 180_000,
    );
    const coldHubMs = performance.now() - tCold;
    const coldReports = (await storedReports()) - coldReports0;
    ctx.progress(
      `cold fleet: objects everywhere after ${coldObjectsMs.toFixed(0)} ms, hub all Synced after ${coldHubMs.toFixed(0)} ms`,
    );

    // Idle.
    await new Promise((resolve) => setTimeout(resolve, 5_000));
    const idleMs = ctx.quick ? 5_000 : 20_000;
    const [idleRedis0, idlePg0] = [await stack.redisCommands(), await stack.pgTransactions()];
    const idle = await sampleIdle(stack.hub.pid, idleMs, 10);
    const idleRedisPerSec = ((await stack.redisCommands()) - idleRedis0) / (idleMs / 1000);
    const idlePgPerSec = ((await stack.pgTransactions()) - idlePg0) / (idleMs / 1000);
    ctx.progress(
      `hub idle: RSS ${idle[idle.length - 1]?.rssMB.toFixed(0)} MB, Redis ${idleRedisPerSec.toFixed(1)} commands/s, PostgreSQL ${idlePgPerSec.toFixed(1)} transactions/s`,
    );

    // Commits.
    const commits = ctx.quick ? 2 : count >= 100 ? 3 : 5;
    const perCluster: number[] = [];
    const allClusters: number[] = [];
    const hubSynced: number[] = [];
    const fetchFloor: number[] = [];
    // Per commit, from the webhook until the hub reports every target Synced at it.
    const rolloutCpu: number[] = [];
    const rolloutCpuMsPerCluster: number[] = [];
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
      // Idle sampling and teardown need about a minute; the first commit runs on whatever is left.
      if (k > 1 && left() < 180_000) {
        capped.push(`only ${done} of ${commits} commits fitted the job's time limit`);
        break;
      }
      commitCapMs = Math.max(10_000, Math.min(120_000, left() - 90_000));
      const release = `r${k}`;
      revision = await stack.repo.commitRelease(release);
      const f0 = performance.now();
      execFileSync('git', ['-C', mirror, 'fetch', '--quiet', '--prune', 'origin']);
      fetchFloor.push(performance.now() - f0);
      const [reports0, redis0, pg0] = [
        await storedReports(),
        await stack.redisCommands(),
        await stack.pgTransactions(),
      ];
      const cpu0 = procCpuSeconds(stack.hub.pid);
      for (const s of shards) s.forget(Date.now());
      const wall0 = Date.now();
      const rssTimer = setInterval(() => rolloutRss.push(procMemory(stack.hub.pid).rssMB), 500);
      const t0 = performance.now();
      const times = clusterTimes(release, t0, commitCapMs);
      await stack.pushWebhook(revision);
      const got = await times;
      for (const t of got) {
        if (t === null) missing++;
        else perCluster.push(t);
      }
      const worst = Math.max(...got.map((t) => t ?? commitCapMs));
      allClusters.push(worst);
      await within(
        `commit ${k}: the hub to report it Synced everywhere`,
        hubAllSynced(revision),
        Math.min(120_000, left() - 60_000),
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
      pgPerCommit.push((await stack.pgTransactions()) - pg0);
      const calls = await agentCalls(wall0);
      const path = await stack.sql((c) =>
        commitPath(
          c,
          calls,
          revision,
          wall0,
          got.filter((t): t is number => t !== null),
        ),
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
      ctx.progress(`commit ${k}/${commits}: last cluster converged after ${worst.toFixed(0)} ms`);
      await new Promise((resolve) => setTimeout(resolve, 1_000));
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
        ...(count >= 100
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
        notes: 'polled every 100 ms through GET /api/v1/targets',
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
        notes: `pg_stat_database.xact_commit of the bench database (flushed by backends about once a second); idle: ${idlePgPerSec.toFixed(1)} transactions/s`,
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
        command: COMMAND,
      }),
    ];
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
          chart: 'fleet-hub-cpu',
          name: 'hub CPU during a rollout (% of a core)',
          unit: '%',
          points: [{ x: count, y: med(`fleet.hub-rollout-cpu.${count}`) }],
        },
      ],
      remarks: [
        ...capped.map((c) => `fleet (${count} clusters): ${c}; recorded at the cap`),
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
  } finally {
    for (const w of watches) w.stop();
    await Promise.all(shards.map((s) => s.stop()));
    await stack.stop();
  }
};
