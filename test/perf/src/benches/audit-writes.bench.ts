import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import { REPO_ROOT } from '@flotilla/cli/fleet';
import { AuditWriter, type WriteResult } from '../audit-writer.js';
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
/** Time for every replica process to get the round and be waiting for its start. */
const START_DELAY_MS = 300;

/** The hub's `Database` and `AuditLog` (from `apps/hub/dist`), for the verification after the writes. */
interface HubDatabase {
  prisma: { auditEvent: { count(): Promise<number> } };
  close(): Promise<void>;
}
interface HubAuditLog {
  verify(options?: { full?: boolean }): Promise<{ valid: boolean; checked: number }>;
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

interface Measured {
  /** Transactions committed in each window, over all replicas. */
  perWindow: number[];
  latencies: number[];
  total: number;
  seconds: number;
}

/**
 * WRITERS loops split over the replica processes, all starting at one instant, each writing until
 * the time or its share of the count runs out; their windows summed.
 */
async function measure(replicas: AuditWriter[], seconds: number, maxWrites: number): Promise<Measured> {
  const startAt = Date.now() + START_DELAY_MS;
  const share = Math.ceil(WRITERS / replicas.length);
  const results: WriteResult[] = await Promise.all(
    replicas.map((r, i) =>
      r.write({
        firstWriter: i * share,
        writers: Math.min(share, WRITERS - i * share),
        startAt,
        seconds,
        maxWrites: Math.ceil(maxWrites / replicas.length),
        windowMs: WINDOW_MS,
      }),
    ),
  );
  const elapsed = Math.max(...results.map((r) => r.endedMs)) / 1000;
  const windows = results[0]!.perWindow.map((_, w) => results.reduce((n, r) => n + (r.perWindow[w] ?? 0), 0));
  const latencies = results.flatMap((r) => r.latencies);
  // A window the run never reached (the count ran out first) is no sample.
  const reached = Math.max(1, Math.min(windows.length, Math.floor((elapsed * 1000) / WINDOW_MS)));
  return { perWindow: windows.slice(0, reached), latencies, total: latencies.length, seconds: elapsed };
}

/**
 * Audit and history writes per second: WRITERS concurrent transactions, each storing one sync run
 * and recording its audit event, from one or two hub replicas — each a Node process of its own
 * (audit-writer.ts) with the hub's `Database` (its connection pool) and `AuditLog` — sharing one
 * PostgreSQL database; with one chain lane (one chain and one lock for every writer, as before
 * lanes) and with eight. Each configuration ends with a full verification of the chain, which must
 * pass and cover every event written.
 */
export const auditWritesBench: BenchFn = async (ctx) => {
  const seconds = ctx.quick ? 3 : 10;
  const maxWrites = ctx.quick ? 5_000 : 50_000;
  const hub = await loadHub();
  const figures: Figure[] = [];
  const remarks = [
    'One replica is one Node process, two replicas are two, each with the hub’s `Database` (its pool of 10 connections) and `AuditLog` loaded from `apps/hub/dist` (test/perf/src/audit-writer.ts), on one PostgreSQL database, the 32 writers split between them and started at one instant. They contend for the chain locks in PostgreSQL as hub processes do, and each has its own event loop; HTTP and Nest are not in the path. After each configuration the bench verifies the whole chain (`AuditLog.verify({ full: true })` over every lane), which must pass and cover every event written.',
  ];
  for (const lanes of [1, 8]) {
    for (const replicaCount of [1, 2]) {
      const dbName = `flotilla_bench_audit_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;
      await withAdmin((c) => c.query(`CREATE DATABASE "${dbName}"`));
      const url = new URL(ADMIN_DATABASE_URL);
      url.pathname = `/${dbName}`;
      const replicas: AuditWriter[] = [];
      const drop = async () => {
        for (const r of replicas) await r.stop().catch(() => undefined);
        await withAdmin((c) => c.query(`DROP DATABASE IF EXISTS "${dbName}" WITH (FORCE)`));
      };
      const forget = onStop(drop);
      try {
        // One after the other: the first applies the hub's migrations, the second finds them applied.
        for (let i = 0; i < replicaCount; i++) replicas.push(await AuditWriter.start(url.toString(), lanes));
        // Warm-up: connections opened and statements prepared before the clock starts.
        await measure(replicas, 0.5, WRITERS * 2);
        const m = await measure(replicas, seconds, maxWrites);
        for (const r of replicas) await r.stop();
        const { verified, events } = await verifyChain(hub, url.toString(), lanes);
        if (!verified.valid || verified.checked !== events)
          throw new Error(
            `the audit chain does not verify after ${lanes} lane(s), ${replicaCount} replica(s): ${JSON.stringify(verified)} of ${events} events`,
          );
        const rate = m.total / m.seconds;
        ctx.progress(
          `lanes ${lanes}, ${replicaCount} replica process(es): ${m.total} writes in ${m.seconds.toFixed(1)} s = ${rate.toFixed(0)}/s; chain verified in full (${verified.checked} events)`,
        );
        figures.push(...configurationFigures(lanes, replicaCount, m));
      } finally {
        await drop();
        forget();
      }
    }
  }
  return { figures, series: [], remarks };
};

/** A full verification of every lane by a `Database` and `AuditLog` of the bench's own, after the writers stopped. */
async function verifyChain(hub: HubModules, url: string, lanes: number) {
  const db = await hub.Database.open({ kind: 'postgres', url });
  try {
    const verified = await new hub.AuditLog(db, { audit: { chainLanes: lanes } }).verify({ full: true });
    return { verified, events: await db.prisma.auditEvent.count() };
  } finally {
    await db.close();
  }
}

function configurationFigures(lanes: number, replicaCount: number, m: Measured): Figure[] {
  const rate = m.total / m.seconds;
  const tag = `lanes-${lanes}.replicas-${replicaCount}`;
  const what = `${lanes === 1 ? 'one chain (lanes=1)' : `${lanes} lanes`}, ${replicaCount} replica${replicaCount > 1 ? 's' : ''}`;
  return [
    figure({
      id: `audit-writes.rate.${tag}`,
      bench: BENCH,
      title: `Sync run + audit event transactions per second, ${what}`,
      unit: 'writes/s',
      fleetSize: 0,
      samples: m.perWindow.map((n) => (n * 1000) / WINDOW_MS),
      notes: `${WRITERS} writers in ${replicaCount} process${replicaCount > 1 ? 'es' : ''}; ${m.total} transactions in ${m.seconds.toFixed(1)} s (${rate.toFixed(0)}/s overall); per ${WINDOW_MS} ms window`,
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
  ];
}

async function withAdmin<T>(fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: ADMIN_DATABASE_URL });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}
