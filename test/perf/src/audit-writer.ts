import { fork, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { REPO_ROOT } from '@flotilla/cli/fleet';
import { shardReply } from './shard-process.js';

/**
 * One hub replica's audit writes for the audit-writes bench, in a Node process of its own: the hub's
 * `Database` (its migrations, its pool of 10 connections) and `AuditLog`, loaded from `apps/hub/dist`,
 * with writer loops that each store a sync run and record its audit event in one transaction, as the
 * report ingest does. Two of these are two hub processes as far as PostgreSQL and the chain locks are
 * concerned: two pools, two event loops, two CPUs' worth of Node; HTTP and Nest are not in the path.
 */
interface Tx {
  $executeRaw(query: TemplateStringsArray, ...values: unknown[]): Promise<number>;
}
interface HubDatabase {
  prisma: {
    $transaction<T>(fn: (tx: Tx) => Promise<T>, options?: { maxWait?: number; timeout?: number }): Promise<T>;
  };
  close(): Promise<void>;
}
interface HubAuditLog {
  record(entry: { actor: string; action: string; scope: string; details?: unknown }, tx?: Tx): Promise<void>;
}
interface HubModules {
  Database: { open(config: { kind: 'postgres'; url: string }): Promise<HubDatabase> };
  AuditLog: new (db: HubDatabase, config: { audit: { chainLanes: number } }) => HubAuditLog;
}

/** What a replica is asked to write: writer loops numbered from `firstWriter`, from `startAt` (epoch ms). */
export interface WriteRound {
  firstWriter: number;
  writers: number;
  startAt: number;
  seconds: number;
  maxWrites: number;
  windowMs: number;
}

/** What a replica wrote: transactions committed per window since `startAt`, and each one's latency. */
export interface WriteResult {
  perWindow: number[];
  latencies: number[];
  /** When the last writer stopped, ms after `startAt`. */
  endedMs: number;
}

type ToWriter =
  { type: 'open'; url: string; lanes: number } | { type: 'write'; round: WriteRound } | { type: 'stop' };
type FromWriter =
  { type: 'ready' } | { type: 'failed'; message: string } | { type: 'written'; result: WriteResult };

/** The bench's handle on one replica process. */
export class AuditWriter {
  private constructor(private readonly child: ChildProcess) {}

  get pid(): number {
    return this.child.pid ?? 0;
  }

  /** Forks the process and opens the hub's Database on `url` (migrating it, if first) with `lanes` chain lanes. */
  static async start(url: string, lanes: number): Promise<AuditWriter> {
    const child = fork(fileURLToPath(new URL('./audit-writer.js', import.meta.url)), [], {
      env: { ...process.env, FLOTILLA_AUDIT_WRITER: '1' },
      serialization: 'advanced',
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    try {
      const m = await AuditWriter.ask(child, { type: 'open', url, lanes });
      if (m.type !== 'ready') throw new Error('audit writer: unexpected answer');
      return new AuditWriter(child);
    } catch (e) {
      child.kill('SIGKILL');
      throw e;
    }
  }

  async write(round: WriteRound): Promise<WriteResult> {
    const m = await AuditWriter.ask(this.child, { type: 'write', round });
    if (m.type !== 'written') throw new Error('audit writer: unexpected answer');
    return m.result;
  }

  /** Closes the pool; the process then exits by itself, or is killed after 20 s. */
  async stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => this.child.once('exit', () => resolve()));
    if (this.child.connected) this.child.send({ type: 'stop' } satisfies ToWriter);
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 20_000);
    await exited;
    clearTimeout(timer);
  }

  private static async ask(child: ChildProcess, m: ToWriter): Promise<FromWriter> {
    const answer = shardReply<FromWriter>(child, 'audit writer', (r) => r.type !== undefined);
    child.send(m);
    const r = await answer;
    if (r.type === 'failed') throw new Error(`audit writer ${child.pid ?? '?'}: ${r.message}`);
    return r;
  }
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
    // The report ingest's transaction timeout (INGEST_TX): under one chain lock on a busy machine a
    // transaction can wait seconds for it, past Prisma's default of 5 s.
    { maxWait: 60_000, timeout: 30_000 },
  );
}

/** The round's writer loops, each writing until the time or this replica's count runs out. */
async function writeRound(db: HubDatabase, audit: HubAuditLog, round: WriteRound): Promise<WriteResult> {
  // Every replica starts at the same wall-clock instant, so their windows line up when summed.
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, round.startAt - Date.now())));
  const end = round.startAt + round.seconds * 1000;
  const perWindow = new Array<number>(Math.ceil((round.seconds * 1000) / round.windowMs)).fill(0);
  const latencies: number[] = [];
  let started = 0;
  await Promise.all(
    Array.from({ length: round.writers }, async (_, i) => {
      while (Date.now() < end && started < round.maxWrites) {
        started++;
        const t0 = performance.now();
        await writeOne(db, audit, round.firstWriter + i);
        latencies.push(performance.now() - t0);
        const w = Math.floor((Date.now() - round.startAt) / round.windowMs);
        if (w < perWindow.length) perWindow[w] = (perWindow[w] ?? 0) + 1;
      }
    }),
  );
  return { perWindow, latencies, endedMs: Date.now() - round.startAt };
}

function serve(): void {
  const post = (m: FromWriter): void => void process.send?.(m);
  let opened: { db: HubDatabase; audit: HubAuditLog } | undefined;
  const fail = (e: unknown) => post({ type: 'failed', message: e instanceof Error ? e.message : String(e) });
  process.on('message', (m: ToWriter) => {
    if (m.type === 'open') {
      void (async () => {
        const hub = await loadHub();
        const db = await hub.Database.open({ kind: 'postgres', url: m.url });
        opened = { db, audit: new hub.AuditLog(db, { audit: { chainLanes: m.lanes } }) };
        post({ type: 'ready' });
      })().catch(fail);
    } else if (m.type === 'write') {
      if (!opened) return fail(new Error('write before open'));
      const { db, audit } = opened;
      void writeRound(db, audit, m.round)
        .then((result) => post({ type: 'written', result }))
        .catch(fail);
    } else {
      void (opened?.db.close() ?? Promise.resolve()).finally(() => process.exit(0));
    }
  });
}

if (process.env['FLOTILLA_AUDIT_WRITER'] === '1' && process.send) {
  // The bench gone, nothing is left to write for.
  process.on('disconnect', () => process.exit(1));
  serve();
}
