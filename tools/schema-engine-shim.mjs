#!/usr/bin/env node
// Stand-in for Prisma's native `schema-engine` binary, which the CLI would download from a host this
// machine cannot reach. It speaks the same JSON-RPC over stdin/stdout and runs the engine built for
// WebAssembly (@prisma/schema-engine-wasm) on a JS driver adapter:
//   postgres://… or postgresql://…  → @prisma/adapter-pg
//   pglite:/dir (or no usable URL)  → an embedded PGlite database (in memory when no dir is given)
// prisma.config.ts points PRISMA_SCHEMA_ENGINE_BINARY here, so `npx prisma migrate diff|deploy|status` work.
import { createInterface } from 'node:readline';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import * as bindings from '@prisma/schema-engine-wasm/schema_engine_bg';
import { bindMigrationAwareSqlAdapterFactory } from '@prisma/driver-adapter-utils';

// The WASM panic hook reports through this registry; without it a panic becomes an unreadable crash.
globalThis.PRISMA_WASM_PANIC_REGISTRY ??= {
  message: '',
  get() {
    return this.message;
  },
  set_message(m) {
    this.message = `RuntimeError: ${m}`;
  },
};

const log = (level, message) => process.stderr.write(JSON.stringify({ level, fields: { message } }) + '\n');

function argValue(name) {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

function datasourceUrl() {
  const raw = argValue('--datasource');
  if (!raw) return process.env.DATABASE_URL;
  try {
    return JSON.parse(raw).url ?? process.env.DATABASE_URL;
  } catch {
    return process.env.DATABASE_URL;
  }
}

function isPostgresUrl(url) {
  return /^postgres(ql)?:\/\//.test(url ?? '') && !/\/placeholder(\?|$)/.test(url ?? '');
}

async function pgliteFactory(dir) {
  const { PGlite } = await import('@electric-sql/pglite');
  const { PrismaPGlite } = await import('pglite-prisma-adapter');
  const db = dir ? new PGlite(dir) : new PGlite();
  await db.waitReady;
  return new PrismaPGlite(db);
}

/** Makes the database a postgres URL names when it does not exist yet (P1003 in the engine's terms). */
async function ensurePostgresDatabase(url) {
  const { default: pg } = await import('pg');
  const target = new URL(url);
  const name = decodeURIComponent(target.pathname.slice(1)) || 'postgres';
  const admin = new URL(url);
  admin.pathname = '/postgres';
  const client = new pg.Client({ connectionString: admin.toString() });
  await client.connect();
  try {
    const found = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (found.rowCount === 0) await client.query(`CREATE DATABASE "${name.replaceAll('"', '""')}"`);
  } finally {
    await client.end();
  }
}

async function adapterFactory(url) {
  if (isPostgresUrl(url)) {
    await ensurePostgresDatabase(url);
    const { PrismaPg } = await import('@prisma/adapter-pg');
    return new PrismaPg({ connectionString: url });
  }
  if (url?.startsWith('pglite:')) return pgliteFactory(url.slice('pglite:'.length) || undefined);
  return pgliteFactory(undefined);
}

// `schema-engine cli <command>`: the CLI reads the result from stderr and drops its first line.
async function runCliCommand(command) {
  log('INFO', `schema-engine-shim ${command}`);
  const url = datasourceUrl();
  try {
    if (command === 'can-connect-to-database' || command === 'create-database') {
      const factory = await adapterFactory(url);
      const adapter = await factory.connect();
      await adapter.queryRaw({ sql: 'SELECT 1', args: [], argTypes: [] });
      await adapter.dispose();
      log('INFO', 'ok');
      process.exit(0);
    }
    log('ERROR', `schema-engine-shim: unsupported cli command ${command}`);
    process.exit(1);
  } catch (e) {
    process.stderr.write(
      JSON.stringify({ is_panic: false, message: String(e?.message ?? e), error_code: 'P1001' }) + '\n',
    );
    process.exit(1);
  }
}

// `cli <command>` may follow the `--datasource` option, so look for it anywhere.
const cliAt = process.argv.indexOf('cli');
if (cliAt > 1) {
  await runCliCommand(process.argv[cliAt + 1]);
} else if (process.argv.includes('--version') || process.argv.includes('-V')) {
  process.stdout.write('schema-engine-shim (wasm)\n');
  process.exit(0);
}

// The package's main entry imports the .wasm file as an ES module (a bundler feature Node lacks),
// so instantiate it here and hand it to the generated bindings the same way that entry would.
async function loadEngine() {
  const require = createRequire(import.meta.url);
  const wasmPath = require.resolve('@prisma/schema-engine-wasm/schema_engine_bg').replace(/\.js$/, '.wasm');
  const { instance } = await WebAssembly.instantiate(await readFile(wasmPath), {
    './schema_engine_bg.js': bindings,
  });
  bindings.__wbg_set_wasm(instance.exports);
  instance.exports.__wbindgen_start();
  return bindings.SchemaEngine;
}

const SchemaEngine = await loadEngine();
// `--datamodels <schema file>` (repeatable): the engine wants [path, content] pairs.
const datamodels = [];
for (let i = 2; i < process.argv.length; i++) {
  if (process.argv[i] === '--datamodels' && process.argv[i + 1]) {
    const path = process.argv[++i];
    datamodels.push([path, await readFile(path, 'utf8')]);
  }
}
const factory = bindMigrationAwareSqlAdapterFactory(await adapterFactory(datasourceUrl()));
const engine = await SchemaEngine.new(
  { datamodels: datamodels.length > 0 ? datamodels : undefined },
  (msg) => process.stderr.write(String(msg) + '\n'),
  factory,
);

function send(message) {
  process.stdout.write(JSON.stringify({ jsonrpc: '2.0', ...message }) + '\n');
}

function errorOf(e) {
  const message = String(e?.message ?? e);
  return {
    code: 4466,
    message: 'An error happened. Check the data field for details.',
    data: { is_panic: false, message, meta: e?.meta ?? null, error_code: e?.code ?? null },
  };
}

let busy = Promise.resolve();
const lines = createInterface({ input: process.stdin });
lines.on('line', (line) => {
  if (!line.trim()) return;
  const request = JSON.parse(line);
  // Replies from the CLI (to our `print` requests) carry no method and need no answer.
  if (typeof request.method !== 'string') return;
  busy = busy.then(async () => {
    try {
      if (typeof engine[request.method] !== 'function') {
        send({ id: request.id, error: { code: -32601, message: `method ${request.method} not supported` } });
        return;
      }
      let result = await engine[request.method](request.params ?? {});
      if (request.method === 'diff' && result?.stdout != null) {
        // The native engine prints the diff itself through a `print` request; the WASM one returns it.
        send({ id: `print-${request.id}`, method: 'print', params: { content: result.stdout } });
        result = { exitCode: result.exitCode };
      }
      send({ id: request.id, result: result ?? {} });
    } catch (e) {
      send({ id: request.id, error: errorOf(e) });
    }
  });
});
// The WASM engine can leave timers behind (after applyMigrations); the CLI closing stdin means we are done.
lines.on('close', () => {
  void busy.then(() => process.exit(0));
});
