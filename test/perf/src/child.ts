import { writeFileSync } from 'node:fs';
import { agentBench } from './benches/agent.bench.js';
import { desiredStateBench } from './benches/desired-state.bench.js';
import { diffThroughput } from './benches/diff.bench.js';
import { fleetBench } from './benches/fleet.bench.js';
import { simIdle } from './benches/sim-idle.bench.js';
import { type BenchFn } from './types.js';

/** Every benchmark by the name `--only` takes. */
const BENCHES: Record<string, BenchFn> = {
  sim: simIdle,
  agent: agentBench,
  diff: diffThroughput,
  desired: desiredStateBench,
  fleet: fleetBench,
};

// One benchmark per process, so that its RSS and CPU are its own and a crash stays contained.
// argv: <bench> <params JSON> <quick 0|1> <result file>
const [name, paramsJson, quick, outFile] = process.argv.slice(2);
const fn = name ? BENCHES[name] : undefined;
if (!fn || !paramsJson || !outFile) {
  console.error('usage: child.js <bench> <params JSON> <0|1> <result file>');
  process.exit(2);
}
const params = JSON.parse(paramsJson) as Record<string, number>;
const label = `[${name}${params['clusters'] !== undefined ? ` ${params['clusters']}` : ''}]`;
try {
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
