import { defineConfig } from 'prisma/config';

// Prisma's CLI would download a native schema engine, which this machine cannot reach;
// the shim runs the same engine from the @prisma/schema-engine-wasm package instead.
process.env['PRISMA_SCHEMA_ENGINE_BINARY'] ??= new URL(
  './tools/schema-engine-shim.mjs',
  import.meta.url,
).pathname;

export default defineConfig({
  schema: 'prisma/schema.prisma',
  migrations: { path: 'prisma/migrations' },
  // env() from prisma/config throws when unset; a placeholder keeps `prisma generate` working with no database.
  datasource: { url: process.env['DATABASE_URL'] ?? 'postgresql://localhost:5432/placeholder' },
});
