import { writeFileSync } from 'node:fs';
import { runCleanups } from './cleanup.js';
import { type BenchFn } from './types.js';

/**
 * Every benchmark by the name `--only` takes, loaded lazily: a process that measures its own RSS
 * must not carry the modules of the others.
 */
const BENCHES: Record<string, () => Promise<BenchFn>> = {
  sim: async () => (await import('./benches/sim-idle.bench.js')).simIdle,
  'sim-apply': async () => (await import('./benches/sim-apply.bench.js')).simApply,
  agent: async () => (await import('./benches/agent.bench.js')).agentBench,
  diff: async () => (await import('./benches/diff.bench.js')).diffThroughput,
  desired: async () => (await import('./benches/desired-state.bench.js')).desiredStateBench,
  ingest: async () => (await import('./benches/ingest.bench.js')).ingestBench,
  fleet: async () => (await import('./benches/fleet.bench.js')).fleetBench,
  swarm: async () => (await import('./benches/swarm.bench.js')).swarmBench,
  history: async () => (await import('./benches/history.bench.js')).historyBench,
  console: async () => (await import('./benches/console.bench.js')).consoleBench,
  plan: async () => (await import('./benches/plan.bench.js')).planBench,
  'audit-writes': async () => (await import('./benches/audit-writes.bench.js')).auditWritesBench,
  policy: async () => (await import('./benches/policy.bench.js')).policyBench,
};

// One benchmark per process, so that its RSS and CPU are its own and a crash stays contained.
// argv: <bench> <params JSON> <quick 0|1> <result file>
const [name, paramsJson, quick, outFile] = process.argv.slice(2);
const load = name ? BENCHES[name] : undefined;
if (!load || !paramsJson || !outFile) {
  console.error('usage: child.js <bench> <params JSON> <0|1> <result file>');
  process.exit(2);
}
process.once('SIGTERM', () => {
  console.log('  stopped by the runner: cleaning up');
  const force = setTimeout(() => process.exit(143), 20_000);
  void runCleanups().finally(() => {
    clearTimeout(force);
    process.exit(143);
  });
});
const params = JSON.parse(paramsJson) as Record<string, number>;
const label = `[${name}${params['clusters'] !== undefined ? ` ${params['clusters']}` : ''}]`;
try {
  const fn = await load();
  const output = await fn({
    quick: quick === '1',
    params,
    progress: (line) => console.log(`  ${label} ${line}`),
  });
  writeFileSync(outFile, JSON.stringify(output));
  process.exit(0);
} catch (err) {
  console.error(`  ${label} failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  process.exit(1);
}
