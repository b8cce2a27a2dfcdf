import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cpuProfileArgs } from './cpu-profile.js';
import { describeMachine } from './machine.js';
import { renderMarkdown, type BenchFile, type BenchRun } from './report-writer.js';
import { flatness, targetValue } from './stats.js';
import { type BenchOutput } from './types.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
// `plan`, `console` and `audit-writes` (each under two minutes) run before the long fleet and history jobs, which trim
// themselves to the budget.
const ALL = [
  'sim',
  'sim-apply',
  'agent',
  'diff',
  'desired',
  'ingest',
  'plan',
  'console',
  'audit-writes',
  'policy',
  'swarm',
  'fleet',
  'history',
] as const;
type BenchName = (typeof ALL)[number];
/**
 * Whole-run budget: the issue allows 30 minutes on 2 cores. A job gets at most what is left of it
 * (and is stopped by PID at that point); a job with less than two minutes left is skipped.
 */
const BUDGET_MS = 29 * 60_000;
/** The 1,000-cluster fleet run's limit: what the other jobs leave of the budget (see jobsFor). */
const FLEET_1000_MINUTES = 9;
/** The swarm's limits: 1,000 clusters always runs (5 of its 7 minutes reserved); 10,000 only when its 14 fit. */
const SWARM_MINUTES = { small: 7, large: 14 };

interface Job {
  bench: BenchName;
  params: Record<string, number>;
  timeoutMs: number;
  /** Kept back from the jobs before this one, so that they cannot leave it too little time. */
  reserveMs?: number;
  /** Run only when its whole limit is left (else skipped, and said so), never cut short. */
  wholeLimit?: boolean;
}

function usage(): never {
  console.error(
    [
      'usage: npm run bench -- [--only sim,sim-apply,agent,diff,desired,ingest,plan,console,audit-writes,policy,swarm,fleet,history] [--quick] [--fleet-sizes 10,100] [--swarm-sizes 1000,10000] [--history-runs N] [--out DIR] [--render-only]',
      '  --quick        reduced sizes (CI); writes to test/perf/dist/quick unless --out is given',
      '  --fleet-sizes  fleet run sizes (default 10,100,1000)',
      '  --swarm-sizes  swarm run sizes (default 1000,10000; 10,000 runs only when its 14 minutes fit the budget)',
      '  --history-runs sync runs the history bench loads, and a fifth as many audit events (default 10000000)',
      '  --render-only  rewrite benchmarks.md from benchmarks.json without running anything',
    ].join('\n'),
  );
  process.exit(2);
}

function parseArgs(argv: string[]): {
  only: BenchName[];
  quick: boolean;
  fleetSizes: number[];
  swarmSizes: number[];
  historyRuns: number | undefined;
  out: string;
  renderOnly: boolean;
} {
  let renderOnly = false;
  let only: BenchName[] = [...ALL];
  let quick = false;
  let fleetSizes: number[] | undefined;
  let swarmSizes: number[] | undefined;
  let historyRuns: number | undefined;
  let out: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const value = (): string => argv[++i] ?? usage();
    if (a === '--quick') quick = true;
    else if (a === '--render-only') renderOnly = true;
    else if (a === '--only') {
      const names = value().split(',').filter(Boolean);
      const bad = names.filter((n) => !(ALL as readonly string[]).includes(n));
      if (bad.length) {
        console.error(`unknown benchmark ${bad.join(', ')}: choose from ${ALL.join(', ')}`);
        process.exit(2);
      }
      only = names as BenchName[];
    } else if (a === '--fleet-sizes') {
      fleetSizes = value().split(',').map(Number);
      if (fleetSizes.some((n) => !Number.isInteger(n) || n < 1)) usage();
    } else if (a === '--swarm-sizes') {
      swarmSizes = value().split(',').map(Number);
      if (swarmSizes.some((n) => !Number.isInteger(n) || n < 1)) usage();
    } else if (a === '--history-runs') {
      historyRuns = Number(value());
      if (!Number.isInteger(historyRuns) || historyRuns < 1000) usage();
    } else if (a === '--out') out = value();
    else usage();
  }
  return {
    only,
    quick,
    fleetSizes: fleetSizes ?? (quick ? [5] : [10, 100, 1000]),
    swarmSizes: swarmSizes ?? (quick ? [20] : [1000, 10_000]),
    historyRuns,
    out: out ?? (quick ? join(ROOT, 'test/perf/dist/quick') : join(ROOT, 'docs')),
    renderOnly,
  };
}

function jobsFor(
  bench: BenchName,
  quick: boolean,
  fleetSizes: number[],
  swarmSizes: number[],
  historyRuns: number | undefined,
): Job[] {
  const min = 60_000;
  switch (bench) {
    case 'sim':
      return (quick ? [10, 100] : [10, 100, 1000]).map((clusters) => ({
        bench,
        params: { clusters },
        timeoutMs: 5 * min,
      }));
    case 'sim-apply':
      return [{ bench, params: { clusters: 10 }, timeoutMs: 3 * min }];
    case 'agent':
      return [{ bench, params: {}, timeoutMs: 8 * min }];
    case 'diff':
      return [{ bench, params: {}, timeoutMs: 2 * min }];
    case 'desired':
      return [{ bench, params: {}, timeoutMs: 10 * min }];
    case 'ingest':
      return [{ bench, params: {}, timeoutMs: 4 * min }];
    case 'console':
      return [{ bench, params: {}, timeoutMs: 4 * min }];
    case 'audit-writes':
      // Under two minutes on a quiet machine; at load average 15 four configurations of fresh
      // databases and replica processes took over three.
      return [{ bench, params: {}, timeoutMs: 5 * min }];
    case 'policy':
      // In process, no services: well under a minute.
      return [{ bench, params: {}, timeoutMs: 2 * min }];
    case 'fleet':
      // The child is told its limit (limitSeconds, set when the job starts) and fits its waits in it.
      return fleetSizes.map((clusters) => ({
        bench,
        params: { clusters },
        timeoutMs: (clusters >= 1000 ? FLEET_1000_MINUTES : clusters >= 100 ? 8 : 5) * min,
        // The 1,000-cluster run is never dropped for time: earlier jobs leave it at least this.
        ...(clusters >= 1000 && !quick ? { reserveMs: 7 * min } : {}),
      }));
    case 'swarm':
      // Told its limit like fleet; the 1,000 run is kept time for, a larger one runs only whole.
      return swarmSizes.map((clusters) => ({
        bench,
        params: { clusters },
        timeoutMs: (clusters > 1000 ? SWARM_MINUTES.large : SWARM_MINUTES.small) * min,
        ...(clusters === 1000 && !quick ? { reserveMs: 5 * min } : {}),
        ...(clusters > 1000 ? { wholeLimit: true } : {}),
      }));
    case 'plan':
      // 100 and 1,000 clusters × 10 apps; the 1,000 run reads and renders 20,000 targets.
      return (quick ? [10] : [100, 1000]).map((clusters) => ({
        bench,
        params: { clusters },
        timeoutMs: (clusters >= 1000 ? 6 : 3) * min,
      }));
    case 'history':
      return [
        {
          bench,
          params: historyRuns ? { runs: historyRuns } : {},
          timeoutMs: 20 * min,
          // Enough for a million runs, the fewest it loads when time is short.
          ...(!quick ? { reserveMs: 3 * min } : {}),
        },
      ];
  }
}

/** Runs one job in its own Node process; kills it by PID when it overruns. */
function runJob(job: Job, quick: boolean, resultFile: string): Promise<BenchOutput | string> {
  return new Promise((resolve) => {
    const child = spawn(
      process.execPath,
      [
        '--expose-gc',
        ...cpuProfileArgs(),
        join(ROOT, 'test/perf/dist/child.js'),
        job.bench,
        JSON.stringify(job.params),
        quick ? '1' : '0',
        resultFile,
      ],
      { cwd: ROOT, stdio: ['ignore', 'inherit', 'inherit'] },
    );
    const timer = setTimeout(() => {
      console.log(
        `  [${job.bench}] over its ${(job.timeoutMs / 60_000).toFixed(1)} min limit: killing pid ${child.pid}`,
      );
      child.kill('SIGTERM');
      setTimeout(() => child.kill('SIGKILL'), 10_000).unref();
    }, job.timeoutMs);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      if (code === 0 && existsSync(resultFile)) {
        resolve(JSON.parse(readFileSync(resultFile, 'utf8')) as BenchOutput);
      } else resolve(`exited with ${code ?? signal}`);
    });
  });
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  if (args.renderOnly) {
    // Rewrites benchmarks.md from benchmarks.json (after a change to the report's layout).
    const file = JSON.parse(readFileSync(join(args.out, 'benchmarks.json'), 'utf8')) as BenchFile;
    writeFileSync(join(args.out, 'benchmarks.md'), renderMarkdown(file, ALL));
    console.log(`rewrote ${join(args.out, 'benchmarks.md')} from benchmarks.json`);
    return;
  }
  const machine = describeMachine();
  const started = Date.now();
  console.log(
    `flotilla bench: ${args.only.join(', ')}${args.quick ? ' (quick)' : ''} on ${machine.cores} × ${machine.cpuModel}, ` +
      `${machine.memoryGiB} GiB, Node ${machine.node}, load ${machine.loadAverage}`,
  );
  const tmp = mkdtempSync(join(tmpdir(), 'flotilla-bench-results-'));
  const runs: Record<string, BenchRun> = {};
  const failures: string[] = [];
  /** Jobs skipped or cut short, and how long each job took, for the summary. */
  const incomplete: string[] = [];
  const durations: string[] = [];
  const plan = args.only.map((bench) => ({
    bench,
    jobs: jobsFor(bench, args.quick, args.fleetSizes, args.swarmSizes, args.historyRuns),
  }));
  const allJobs = plan.flatMap((p) => p.jobs);
  /** What the jobs after `job` have reserved. */
  const reservedAfter = (job: Job): number =>
    allJobs.slice(allJobs.indexOf(job) + 1).reduce((sum, j) => sum + (j.reserveMs ?? 0), 0);
  try {
    for (const { bench, jobs } of plan) {
      const run: BenchRun = {
        date: new Date().toISOString(),
        quick: args.quick,
        machine,
        figures: [],
        series: [],
        remarks: [],
      };
      for (const [i, job] of jobs.entries()) {
        const label = `${bench}${job.params['clusters'] !== undefined ? ` (${job.params['clusters']} clusters)` : ''}`;
        const left = BUDGET_MS - (Date.now() - started) - reservedAfter(job);
        if (bench === 'history' && !args.quick && job.params['runs'] === undefined && left < job.timeoutMs) {
          // With less than its 20 minutes left (the fleet runs before it take most of the budget), load
          // fewer runs (whole millions, at least one) rather than be stopped half-way: about 2 minutes
          // plus 0.8 a million (measured 0.45 a million on a quiet machine, 0.7 at load average 11).
          const runs = Math.max(1, Math.min(10, Math.floor((left - 2 * 60_000) / 48_000))) * 1e6;
          job.params['runs'] = runs;
          if (runs < 10_000_000) {
            const why = `history loaded ${runs.toLocaleString('en-US')} runs instead of 10,000,000: ${(left / 60_000).toFixed(0)} min of the budget were left`;
            run.remarks.push(why);
            incomplete.push(`trimmed: ${why}`);
          }
        }
        if (job.wholeLimit && left < job.timeoutMs) {
          const why = `${label} skipped: its ${job.timeoutMs / 60_000} min did not fit the ${(left / 60_000).toFixed(0)} min left of the budget (run it with --only ${bench})`;
          run.remarks.push(why);
          console.log(`- ${why}`);
          incomplete.push(why);
          continue;
        }
        job.timeoutMs = Math.min(job.timeoutMs, left);
        if (bench === 'fleet' || bench === 'swarm')
          job.params['limitSeconds'] = Math.floor(job.timeoutMs / 1000);
        if (left < 2 * 60_000) {
          run.remarks.push(`${label} skipped: the run had used its ${BUDGET_MS / 60_000} min budget`);
          console.log(`- ${label}: skipped (budget)`);
          incomplete.push(`skipped ${label}: the ${BUDGET_MS / 60_000} min budget was used up`);
          continue;
        }
        console.log(`- ${label} …`);
        const t0 = Date.now();
        const result = await runJob(job, args.quick, join(tmp, `${bench}-${i}.json`));
        if (typeof result === 'string') {
          failures.push(`${label}: ${result}`);
          durations.push(`${label} ${((Date.now() - t0) / 1000).toFixed(0)} s (failed)`);
          run.remarks.push(`${label} failed (${result}); its figures are missing from this run`);
          console.log(`- ${label}: FAILED (${result})`);
          continue;
        }
        run.figures.push(...result.figures);
        run.series.push(...result.series);
        run.remarks.push(...result.remarks);
        durations.push(`${label} ${((Date.now() - t0) / 1000).toFixed(0)} s`);
        for (const rem of result.remarks)
          if (/recorded at the cap/.test(rem)) incomplete.push(`capped wait in ${rem}`);
        console.log(
          `- ${label}: ${result.figures.length} figures in ${((Date.now() - t0) / 1000).toFixed(0)} s`,
        );
      }
      const derived =
        bench === 'sim'
          ? [
              flatness(
                run.figures,
                'sim.idle-rss-per-cluster.',
                'sim',
                'kube-sim RSS per idle cluster',
                'npm run bench -- --only sim',
              ),
            ]
          : bench === 'fleet'
            ? (
                [
                  ['fleet.hub-idle-rss-per-cluster.', 'hub RSS per idle cluster'],
                  ['fleet.hub-idle-cpu-per-cluster.', 'hub CPU per idle cluster'],
                  ['fleet.redis-idle-per-cluster.', 'Redis commands per idle cluster'],
                  ['fleet.pg-idle-per-cluster.', 'PostgreSQL transactions per idle cluster'],
                ] as const
              ).map(([prefix, what]) =>
                flatness(run.figures, prefix, 'fleet', what, 'npm run bench -- --only fleet'),
              )
            : [];
      for (const f of derived) if (f) run.figures.push(f);
      runs[bench] = run;
    }
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }

  mkdirSync(args.out, { recursive: true });
  const jsonPath = join(args.out, 'benchmarks.json');
  const previous: BenchFile | undefined = existsSync(jsonPath)
    ? (JSON.parse(readFileSync(jsonPath, 'utf8')) as BenchFile)
    : undefined;
  // A subset run replaces only the benchmarks it ran; the others keep their last figures and date.
  const file: BenchFile = { generatedAt: new Date().toISOString(), runs: { ...previous?.runs, ...runs } };
  writeFileSync(jsonPath, `${JSON.stringify(file, null, 2)}\n`);
  writeFileSync(join(args.out, 'benchmarks.md'), renderMarkdown(file, ALL));

  const figures = Object.values(runs).flatMap((r) => r.figures);
  const judged = figures.filter((f) => f.verdict !== 'no target');
  console.log('');
  console.log(`summary (${((Date.now() - started) / 60_000).toFixed(1)} min):`);
  for (const f of judged) {
    const v = targetValue(f);
    console.log(
      `  ${f.verdict === 'met' ? 'met   ' : 'MISSED'} ${f.title}: ${f.target?.on} ${v.toFixed(1)} ${f.unit} (target ${f.target?.text})`,
    );
  }
  for (const fail of failures) console.log(`  FAILED ${fail}: its figures are missing`);
  for (const line of incomplete) console.log(`  ${line}`);
  console.log(`  job durations: ${durations.join(', ')}`);
  console.log(
    `${judged.filter((f) => f.verdict === 'met').length} targets met, ${judged.filter((f) => f.verdict === 'missed').length} missed, ` +
      `${figures.length} figures, ${failures.length} failed jobs; wrote ${jsonPath} and benchmarks.md`,
  );
  if (failures.length) process.exitCode = 1;
}

await main();
