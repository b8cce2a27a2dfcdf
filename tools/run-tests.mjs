#!/usr/bin/env node
// `npm test`: builds what end-to-end tests run as real processes, runs every Vitest test once,
// and ends with the plain line `N passed, N failed, N skipped` (CI reads it). Zero tests is a failure.
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const run = (cmd, args, extraEnv = {}) =>
  spawnSync(cmd, args, { cwd: root, stdio: 'inherit', env: { ...process.env, ...extraEnv } }).status ?? 1;

if (
  run('npx', [
    'tsc',
    '-b',
    'apps/hub/tsconfig.app.json',
    'apps/agent/tsconfig.app.json',
    'apps/cli/tsconfig.app.json',
  ]) !== 0
) {
  console.error('build failed');
  console.log('0 passed, 1 failed, 0 skipped');
  process.exit(1);
}
// The agent's deployable bundle (what its image and `flotilla-agent` run), so its tests run too.
if (
  spawnSync('npx', ['rolldown', '-c', 'rolldown.config.mjs'], {
    cwd: join(root, 'apps/agent'),
    stdio: 'inherit',
  }).status !== 0
) {
  console.error('agent bundle build failed');
  console.log('0 passed, 1 failed, 0 skipped');
  process.exit(1);
}

// The web console the hub serves at / (its browser tests drive the built files).
if (run('npx', ['vite', 'build', '--logLevel', 'warn', 'apps/console']) !== 0) {
  console.error('console build failed');
  console.log('0 passed, 1 failed, 0 skipped');
  process.exit(1);
}

const outDir = join(root, '.test-results');
mkdirSync(outDir, { recursive: true });
const jsonFile = join(outDir, 'vitest.json');
const status = run('npx', [
  'vitest',
  'run',
  '--reporter=default',
  '--reporter=json',
  `--outputFile.json=${jsonFile}`,
  ...process.argv.slice(2),
]);

let passed = 0,
  failed = 0,
  skipped = 0;
if (existsSync(jsonFile)) {
  const report = JSON.parse(readFileSync(jsonFile, 'utf8'));
  passed = report.numPassedTests ?? 0;
  failed =
    (report.numFailedTests ?? 0) +
    (report.numRuntimeErrorTestSuites ?? 0) +
    (report.numFailedTestSuites && !report.numFailedTests ? report.numFailedTestSuites : 0);
  skipped = (report.numPendingTests ?? 0) + (report.numTodoTests ?? 0);
}
console.log(`${passed} passed, ${failed} failed, ${skipped} skipped`);
if (status !== 0 || failed > 0) process.exit(status || 1);
if (passed === 0) {
  console.error('no test ran');
  process.exit(1);
}
