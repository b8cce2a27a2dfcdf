// Runs after `npm ci` / `npm install`: generates the Prisma client (not checked in) and builds the
// apps, so that `npx flotilla …` works straight after `npm ci` as ../shared/CLI.md promises.
// Prisma's CLI would try to download its schema engine; prisma.config.ts points it at our WASM shim.
import { existsSync } from 'node:fs';
import { spawnSync } from 'node:child_process';

const root = new URL('..', import.meta.url).pathname;
const step = (what, cmd, args) => {
  const r = spawnSync(cmd, args, { cwd: root, stdio: 'inherit' });
  if (r.status !== 0) {
    console.error(`postinstall: ${what} failed`);
    process.exit(r.status ?? 1);
  }
};

// A real Helm for chart rendering (see fetch-helm.mjs for where it comes from and why).
step('fetch helm', 'node', ['tools/fetch-helm.mjs']);
if (existsSync(`${root}/prisma/schema.prisma`)) step('prisma generate', 'npx', ['prisma', 'generate']);
if (!process.env.FLOTILLA_SKIP_BUILD) {
  step('build', 'npx', [
    'tsc',
    '-b',
    'apps/hub/tsconfig.app.json',
    'apps/agent/tsconfig.app.json',
    'apps/cli/tsconfig.app.json',
  ]);
}
