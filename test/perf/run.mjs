#!/usr/bin/env node
// `npm run bench`: compiles the benchmarks (test/perf/src → test/perf/dist) and runs them.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../', import.meta.url));
const tsc = spawnSync('npx', ['tsc', '-b', 'test/perf'], { cwd: root, stdio: 'inherit' });
if (tsc.status !== 0) {
  console.error('flotilla bench: the benchmarks did not compile');
  process.exit(1);
}
await import('./dist/run.js');
