import { describeMachine } from '../../perf/src/machine.js';
import { ChaosSession, scenarioNames, summaryTable, targetsTable } from './chaos-run.js';
import { type ChaosParams } from './scenarios.js';

/** The whole run is bounded like `npm run bench`: 30 minutes on 2 cores, with a minute to clean up. */
const BUDGET_MS = 29 * 60_000;

function usage(message?: string): never {
  if (message) console.error(`flotilla chaos: ${message}`);
  console.error(
    [
      'usage: npm run chaos -- [--only fleet,hub-kill,…] [--clusters N] [--apps N]',
      '                        [--postgres-outage-seconds S] [--agent-offline-seconds S]',
      '                        [--proxy-fault-seconds S] [--quick]',
      `  scenarios: ${scenarioNames().join(', ')} (fleet always runs first: it deploys the apps)`,
      '  defaults: 10 clusters × 10 apps, PostgreSQL down 30 s, one agent offline 600 s,',
      '            the proxy answers each of 401, 404, 413, 503 for 15 s',
      '  --quick    the CI sizes: 3 clusters × 3 apps, PostgreSQL down 10 s, agent offline 10 s, 3 s per fault',
    ].join('\n'),
  );
  process.exit(2);
}

function parseArgs(argv: string[]): { params: ChaosParams; only: string[] } {
  const params: ChaosParams = {
    clusters: 10,
    apps: 10,
    postgresOutageSeconds: 30,
    agentOfflineSeconds: 600,
    proxyFaultSeconds: 15,
    convergeTimeoutMs: 180_000,
  };
  let only = scenarioNames();
  const int = (flag: string, v: string | undefined, min: number): number => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < min)
      usage(`${flag} needs a whole number ≥ ${min}, got ${v ?? 'nothing'}`);
    return n;
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--quick')
      Object.assign(params, {
        clusters: 3,
        apps: 3,
        postgresOutageSeconds: 10,
        agentOfflineSeconds: 10,
        proxyFaultSeconds: 3,
      });
    else if (a === '--clusters') params.clusters = int(a, argv[++i], 1);
    else if (a === '--apps') params.apps = int(a, argv[++i], 1);
    else if (a === '--postgres-outage-seconds') params.postgresOutageSeconds = int(a, argv[++i], 0);
    else if (a === '--agent-offline-seconds') params.agentOfflineSeconds = int(a, argv[++i], 0);
    else if (a === '--proxy-fault-seconds') params.proxyFaultSeconds = int(a, argv[++i], 0);
    else if (a === '--only') {
      const names = (argv[++i] ?? '').split(',').filter(Boolean);
      const bad = names.filter((n) => !scenarioNames().includes(n));
      if (bad.length || !names.length) usage(`unknown scenario ${bad.join(', ') || '(none given)'}`);
      only = scenarioNames().filter((n) => n === 'fleet' || names.includes(n));
    } else usage(`unknown argument ${a}`);
  }
  return { params, only };
}

async function main(): Promise<void> {
  const { params, only } = parseArgs(process.argv.slice(2));
  const machine = describeMachine();
  const started = Date.now();
  const stamp = (): string => `[${((Date.now() - started) / 1000).toFixed(0).padStart(4)} s]`;
  const progress = (line: string): void => console.log(`${stamp()} ${line}`);
  console.log(
    `flotilla chaos: ${only.join(', ')} on ${params.clusters} clusters × ${params.apps} apps; ` +
      `${machine.cores} × ${machine.cpuModel}, Node ${machine.node}, load ${machine.loadAverage}`,
  );
  const session = await ChaosSession.start(params, progress);
  let stopping = false;
  const stop = async (why: string): Promise<never> => {
    if (!stopping) {
      stopping = true;
      console.error(`flotilla chaos: ${why}; stopping every process it started`);
      await session.stop().catch(() => undefined);
    }
    process.exit(1);
  };
  process.once('SIGINT', () => void stop('interrupted'));
  process.once('SIGTERM', () => void stop('terminated'));
  const overrun = setTimeout(() => void stop(`over the ${BUDGET_MS / 60_000} min budget`), BUDGET_MS);
  try {
    for (const name of only) {
      const result = await session.run(name);
      if (!result.ok && name === 'fleet') break; // nothing to break without a deployed fleet
    }
  } finally {
    clearTimeout(overrun);
    await session.stop();
  }
  const failed = session.results.filter((r) => !r.ok).length;
  console.log('');
  console.log(summaryTable(session.results));
  console.log('');
  const targets = targetsTable(session.results);
  console.log(targets.table);
  console.log('');
  console.log(
    `${session.results.length - failed} scenarios passed, ${failed} failed; ` +
      `${targets.met} targets met, ${targets.missed} missed; in ${((Date.now() - started) / 60_000).toFixed(1)} min`,
  );
  if (failed > 0 || session.results.length < only.length) process.exitCode = 1;
}

await main();
