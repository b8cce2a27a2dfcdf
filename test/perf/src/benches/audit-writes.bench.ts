import { randomBytes, randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import { REPO_ROOT } from '@flotilla/cli/fleet';
import { onStop } from '../cleanup.js';
import { ADMIN_DATABASE_URL } from '../hub-stack.js';
import { figure } from '../stats.js';
import { type BenchFn, type Figure } from '../types.js';

const COMMAND = 'npm run bench -- --only audit-writes';
const BENCH = 'audit-writes';
/** Transactions in flight at once over all replicas (each replica's pool holds 10 connections). */
const WRITERS = 32;
/** Throughput is sampled per window, so the figure has a spread and not just one quotient. */
const WINDOW_MS = 500;

/**
 * The hub's own audit code, loaded from its build (`apps/hub/dist`): `Database` (which applies the
 * hub's migrations on open, with the hub's pool of 10 connections) and `AuditLog`, as the API and
 * the report ingest call it. Typed here by what the bench uses.
 */
interface Tx {
  $executeRaw(query: TemplateStringsArray, ...values: unknown[]): Promise<number>;
}
interface HubDatabase {
  prisma: { $transaction<T>(fn: (tx: Tx) => Promise<T>, options?: { maxWait?: number }): Promise<T> };
  close(): Promise<void>;
}
interface HubAuditLog {
  record(entry: { actor: string; action: string; scope: string; details?: unknown }, tx?: Tx): Promise<void>;
  verify(): Promise<{ valid: boolean; checked: number; lanes?: unknown[] }>;
}
interface HubModules {
  Database: { open(config: { kind: 'postgres'; url: string }): Promise<HubDatabase> };
  AuditLog: new (db: HubDatabase, config: { audit: { chainLanes: number } }) => HubAuditLog;
}

async function loadHub(): Promise<HubModules> {
  const dist = (path: string) => pathToFileURL(join(REPO_ROOT, 'apps/hub/dist', path)).href;
  const [db, audit] = await Promise.all([
    import(dist('db/database.js')) as Promise<Pick<HubModules, 'Database'>>,
    import(dist('audit/audit.service.js')) as Promise<Pick<HubModules, 'AuditLog'>>,
  ]);
  return { ...db, ...audit };
}

/** One sync run and its audit event in one transaction, as the report ingest stores a sync report. */
async function writeOne(db: HubDatabase, audit: HubAuditLog, writer: number): Promise<void> {
  await db.prisma.$transaction(
    async (tx) => {
      const now = new Date();
      const id = randomUUID();
      await tx.$executeRaw`
        INSERT INTO "SyncRun" ("id", "targetId", "clusterId", "targetName", "clusterName", "revision",
                               "bundleDigest", "trigger", "outcome", "startedAt", "finishedAt", "agentReportId")
        VALUES (${id}, ${`t-${writer}`}, ${`c-${writer % 8}`}, ${`web-${writer}`}, ${`eu${writer % 8}`},
                'c0ffee', 'sha256:bench', 'auto', 'Succeeded', ${now}, ${now}, ${id})`;
      await audit.record(
        {
          actor: `agent:eu${writer % 8}`,
          action: 'sync.succeeded',
          scope: `target:web-${writer}`,
          details: { id },
        },
        tx,
      );
    },
    { maxWait: 60_000 },
  );
}

interface Measured {
  /** Transactions committed in each window. */
  perWindow: number[];
  latencies: number[];
  total: number;
  seconds: number;
}

/** WRITERS loops spread over the replicas, each writing until the time or the count runs out. */
async function measure(
  replicas: { db: HubDatabase; audit: HubAuditLog }[],
  seconds: number,
  maxWrites: number,
): Promise<Measured> {
  const start = performance.now();
  const end = start + seconds * 1000;
  const windows = new Array<number>(Math.ceil((seconds * 1000) / WINDOW_MS)).fill(0);
  const latencies: number[] = [];
  let started = 0;
  await Promise.all(
    Array.from({ length: WRITERS }, async (_, writer) => {
      const { db, audit } = replicas[writer % replicas.length]!;
      while (performance.now() < end && started < maxWrites) {
        started++;
        const t0 = performance.now();
        await writeOne(db, audit, writer);
        const t1 = performance.now();
        latencies.push(t1 - t0);
        const w = Math.floor((t1 - start) / WINDOW_MS);
        if (w < windows.length) windows[w] = (windows[w] ?? 0) + 1;
      }
    }),
  );
  const elapsed = (performance.now() - start) / 1000;
  // A window the run never reached (the count ran out first) is no sample.
  const reached = Math.max(1, Math.min(windows.length, Math.floor((elapsed * 1000) / WINDOW_MS)));
  return { perWindow: windows.slice(0, reached), latencies, total: latencies.length, seconds: elapsed };
}

/**
 * Audit and history writes per second: WRITERS concurrent transactions, each storing one sync run
 * and recording its audit event, on one or two hub replicas (each its own `Database` — the hub's
 * connection pool — and `AuditLog`, in the bench process) sharing one PostgreSQL database; with one
 * chain lane (one chain and one lock for every writer, as before lanes) and with eight. Each
 * configuration ends with the chain verified.
 */
export const auditWritesBench: BenchFn = async (ctx) => {
  const seconds = ctx.quick ? 3 : 10;
  const maxWrites = ctx.quick ? 5_000 : 50_000;
  const hub = await loadHub();
  const figures: Figure[] = [];
  const remarks = [
    'Two replicas are two connection pools (the hub’s `Database`, 10 connections each) and two `AuditLog` instances in the bench process, on one PostgreSQL database: the chain lock is in PostgreSQL, so they contend as hub processes do; HTTP and Nest are not in the path.',
  ];
  for (const lanes of [1, 8]) {
    for (const replicaCount of [1, 2]) {
      const dbName = `flotilla_bench_audit_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;
      await withAdmin((c) => c.query(`CREATE DATABASE "${dbName}"`));
      const url = new URL(ADMIN_DATABASE_URL);
      url.pathname = `/${dbName}`;
      const opened: HubDatabase[] = [];
      const forget = onStop(async () => {
        for (const db of opened) await db.close().catch(() => undefined);
        await withAdmin((c) => c.query(`DROP DATABASE IF EXISTS "${dbName}" WITH (FORCE)`));
      });
      try {
        for (let i = 0; i < replicaCount; i++) {
          opened.push(await hub.Database.open({ kind: 'postgres', url: url.toString() }));
        }
        const replicas = opened.map((db) => ({
          db,
          audit: new hub.AuditLog(db, { audit: { chainLanes: lanes } }),
        }));
        // Warm-up: connections opened and statements prepared before the clock starts.
        await measure(replicas, 0.5, WRITERS * 2);
        const m = await measure(replicas, seconds, maxWrites);
        const verified = await replicas[0]!.audit.verify();
        if (!verified.valid)
          throw new Error(
            `the audit chain does not verify after ${lanes} lane(s): ${JSON.stringify(verified)}`,
          );
        const rate = m.total / m.seconds;
        ctx.progress(
          `lanes ${lanes}, ${replicaCount} replica(s): ${m.total} writes in ${m.seconds.toFixed(1)} s = ${rate.toFixed(0)}/s; chain verified (${verified.checked} events)`,
        );
        const tag = `lanes-${lanes}.replicas-${replicaCount}`;
        const what = `${lanes === 1 ? 'one chain (lanes=1)' : `${lanes} lanes`}, ${replicaCount} replica${replicaCount > 1 ? 's' : ''}`;
        figures.push(
          figure({
            id: `audit-writes.rate.${tag}`,
            bench: BENCH,
            title: `Sync run + audit event transactions per second, ${what}`,
            unit: 'writes/s',
            fleetSize: 0,
            samples: m.perWindow.map((n) => (n * 1000) / WINDOW_MS),
            notes: `${WRITERS} writers; ${m.total} transactions in ${m.seconds.toFixed(1)} s (${rate.toFixed(0)}/s overall); per ${WINDOW_MS} ms window`,
            command: COMMAND,
          }),
          figure({
            id: `audit-writes.latency.${tag}`,
            bench: BENCH,
            title: `One sync run + audit event transaction, ${what}`,
            unit: 'ms',
            fleetSize: 0,
            samples: m.latencies,
            notes: `${WRITERS} writers at once: time from BEGIN to COMMIT, waiting for a connection and the chain lock included`,
            command: COMMAND,
          }),
        );
      } finally {
        for (const db of opened) await db.close();
        await withAdmin((c) => c.query(`DROP DATABASE IF EXISTS "${dbName}" WITH (FORCE)`));
        forget();
      }
    }
  }
  return { figures, series: [], remarks };
};

async function withAdmin<T>(fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: ADMIN_DATABASE_URL });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}
