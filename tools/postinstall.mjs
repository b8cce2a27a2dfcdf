// Runs after `npm ci`: generates the Prisma client (it is not checked in) when the schema exists.
// Prisma's CLI would try to download its schema engine; prisma.config.ts points it at our WASM shim.
import { existsSync } from 'node:fs';
import { spawnSync } from 'node:child_process';

if (existsSync(new URL('../prisma/schema.prisma', import.meta.url))) {
  const r = spawnSync('npx', ['prisma', 'generate'], { stdio: 'inherit' });
  process.exit(r.status ?? 1);
}
