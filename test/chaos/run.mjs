#!/usr/bin/env node
// `npm run chaos`: compiles the fault runs (test/chaos/src → test/chaos/dist) and runs them.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../', import.meta.url));
const tsc = spawnSync('npx', ['tsc', '-b', 'test/chaos'], { cwd: root, stdio: 'inherit' });
if (tsc.status !== 0) {
  console.error('flotilla chaos: the fault runs did not compile');
  process.exit(1);
}
await import('./dist/chaos/src/run.js');
