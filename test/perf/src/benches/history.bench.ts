import { randomBytes } from 'node:crypto';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import { REPO_ROOT } from '@flotilla/cli/fleet';
import { onStop } from '../cleanup.js';
import { ADMIN_DATABASE_URL } from '../hub-stack.js';
import { figure, summarize } from '../stats.js';
import { type BenchFn, type Figure, type Target } from '../types.js';

const COMMAND = 'npm run bench -- --only history';
const BENCH = 'history';
const P95_UNDER_50_MS: Target = { on: 'p95', op: '<', value: 50, text: 'p95 < 50 ms' };

/** The fleet the history belongs to: 1,000 clusters, 200 appsets, 5 of them on every cluster. */
const CLUSTERS = 1000;
const APPSETS = 200;
const FLEET_WIDE_APPSETS = 5;
/** Every other appset goes to one cluster in this many (25 clusters each). */
const APPSET_SPREAD = 40;
const PEOPLE = 40;
const YEAR_MS = 365 * 24 * 3600_000;
const DAY_MS = 24 * 3600_000;

/**
 * The hub's own query code, loaded from its build (`apps/hub/dist`): the same `Database` (which
 * applies the hub's migrations on open), `SyncHistory` and `AuditLog` the API controllers call,
 * with the controller's own query schema for sync history. Typed here by what the bench uses.
 */
interface HubDatabase {
  prisma: unknown;
  close(): Promise<void>;
}
interface Page {
  items: unknown[];
  nextCursor: string | null;
}
interface HubModules {
  Database: { open(config: { kind: 'postgres'; url: string }): Promise<HubDatabase> };
  SyncHistory: new (db: HubDatabase) => { list(q: unknown): Promise<Page> };
  syncHistoryQuery: { parse(input: unknown): unknown };
  AuditLog: new (db: HubDatabase) => { list(q: Record<string, unknown>): Promise<Page> };
  ensureMonthPartitions(
    prisma: unknown,
    table: PartitionedTable,
    now: Date,
    monthsAhead: number,
  ): Promise<string[]>;
  dropMonthPartitionsBefore(
    prisma: unknown,
    table: PartitionedTable,
    endsBy: Date,
  ): Promise<{ partitions: string[]; rows: number }>;
  loadHubConfig(env: Record<string, string>): unknown;
  HubMetrics: new (db: HubDatabase) => unknown;
  RetentionService: new (
    db: HubDatabase,
    audit: unknown,
    metrics: unknown,
    config: unknown,
  ) => { run(now: Date): Promise<{ syncRunsDeleted: number; syncRunPartitionsDropped: number }> };
}
type PartitionedTable = 'SyncRun' | 'AuditEvent';

async function loadHub(): Promise<HubModules> {
  const dist = (path: string) => pathToFileURL(join(REPO_ROOT, 'apps/hub/dist', path)).href;
  const [db, history, audit, partitions, config, metrics, retention] = await Promise.all([
    import(dist('db/database.js')) as Promise<Pick<HubModules, 'Database'>>,
    import(dist('history/sync-history.service.js')) as Promise<
      Pick<HubModules, 'SyncHistory' | 'syncHistoryQuery'>
    >,
    import(dist('audit/audit.service.js')) as Promise<Pick<HubModules, 'AuditLog'>>,
    import(dist('db/partitions.js')) as Promise<
      Pick<HubModules, 'ensureMonthPartitions' | 'dropMonthPartitionsBefore'>
    >,
    import(dist('config/hub-config.js')) as Promise<Pick<HubModules, 'loadHubConfig'>>,
    import(dist('metrics/hub-metrics.service.js')) as Promise<Pick<HubModules, 'HubMetrics'>>,
    import(dist('history/retention.service.js')) as Promise<Pick<HubModules, 'RetentionService'>>,
  ]);
  return { ...db, ...history, ...audit, ...partitions, ...config, ...metrics, ...retention };
}

/** A statement as the hub's Prisma client sent it to PostgreSQL. */
interface SentQuery {
  text: string;
  values: unknown[];
}

/**
 * Records every statement the process sends through `pg` (the driver under the hub's Prisma
 * adapter) while `recording` is set, so the bench can EXPLAIN exactly the SQL the hub ran rather
 * than a hand-written equivalent.
 */
class QueryRecorder {
  recording: SentQuery[] | undefined;
  // Kept to be called with the client as `this` (apply below), never as a bare function.
  // eslint-disable-next-line @typescript-eslint/unbound-method
  private readonly original = pg.Client.prototype.query;

  install(): void {
    const original = this.original;
    // eslint-disable-next-line @typescript-eslint/no-this-alias
    const recorder = this;
    pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
      const [first, second] = args;
      if (recorder.recording) {
        if (typeof first === 'string')
          recorder.recording.push({ text: first, values: Array.isArray(second) ? second : [] });
        else if (first && typeof first === 'object' && 'text' in first) {
          const q = first as { text: string; values?: unknown[] };
          recorder.recording.push({ text: q.text, values: q.values ?? [] });
        }
      }
      return (original as (...a: unknown[]) => unknown).apply(this, args);
    } as typeof pg.Client.prototype.query;
  }

  uninstall(): void {
    pg.Client.prototype.query = this.original;
  }
}

interface Fixture {
  clusters: string[];
  appSets: string[];
  people: string[];
  agentActors: string[];
  /** Real runs from the older half of what is kept, for deep cursors. */
  oldRuns: { startedAt: Date; id: string }[];
  minAuditId: number;
  maxAuditId: number;
  /** The stretch of time the history covers: the year loaded, then what retention kept of it. */
  spanStart: number;
  spanMs: number;
}

interface QueryCase {
  id: string;
  title: string;
  /** One call of the hub's query code with fresh random parameters; returns the page. */
  run(): Promise<Page>;
  /** Which recorded statement is the one that reads the big table. */
  table: 'SyncRun' | 'AuditEvent';
}

/**
 * History and audit queries at scale: millions of sync runs and audit events loaded with set-based
 * SQL into a database of the bench's own (the hub's migrations applied first, so the schema and
 * indexes are the real ones), then the hub's own query code timed for the filters people use, and
 * the plan of each captured with EXPLAIN (ANALYZE, BUFFERS).
 */
export const historyBench: BenchFn = async (ctx) => {
  const runs = ctx.params['runs'] ?? (ctx.quick ? 200_000 : 10_000_000);
  // A fifth as many audit events: ten million of each took longer than the whole run's budget
  // allows on the shared two cores (measured: over 3 minutes for the runs' INSERT alone).
  const auditEvents = ctx.params['audit'] ?? Math.round(runs / 5);
  const samples = ctx.quick ? 20 : 100;
  const figures: Figure[] = [];
  const remarks: string[] = [];
  const loadAtStart = loadavg();

  const dbName = `flotilla_bench_${process.pid}_${randomBytes(2).toString('hex')}`;
  const url = new URL(ADMIN_DATABASE_URL);
  url.pathname = `/${dbName}`;
  const dropDatabase = () => withAdmin((c) => c.query(`DROP DATABASE IF EXISTS "${dbName}" WITH (FORCE)`));
  await withAdmin((c) => c.query(`CREATE DATABASE "${dbName}"`));
  const forget = onStop(async () => {
    await dropDatabase();
  });
  const recorder = new QueryRecorder();
  let db: HubDatabase | undefined;
  const sql = new pg.Client({ connectionString: url.toString() });
  try {
    const hub = await loadHub();
    // Opening the hub's Database applies every migration, as a hub starting on it would.
    db = await hub.Database.open({ kind: 'postgres', url: url.toString() });
    await sql.connect();

    const yearStart = Date.now() - YEAR_MS;
    // A month partition for each month loaded (the hub itself keeps only this month and the next ones
    // ready), so retention has whole months to drop.
    for (const table of ['SyncRun', 'AuditEvent'] as const) {
      await hub.ensureMonthPartitions(db.prisma, table, new Date(yearStart), 13);
    }
    const t0 = performance.now();
    const fixture = await load(sql, runs, auditEvents, yearStart, ctx.progress);
    const loadSeconds = (performance.now() - t0) / 1000;
    const size = await sql.query<{ runs: string; audit: string }>(
      `SELECT pg_size_pretty(pg_total_relation_size('"SyncRun"')) AS runs,
              pg_size_pretty(pg_total_relation_size('"AuditEvent"')) AS audit`,
    );
    ctx.progress(`loaded in ${loadSeconds.toFixed(0)} s`);
    figures.push(
      figure({
        id: 'history.load-seconds',
        bench: BENCH,
        title: `Load ${runs.toLocaleString('en-US')} sync runs and ${auditEvents.toLocaleString('en-US')} audit events (set-based SQL, indexes rebuilt, VACUUM ANALYZE)`,
        unit: 's',
        fleetSize: CLUSTERS,
        samples: [loadSeconds],
        notes: `tables with their indexes: SyncRun ${size.rows[0]?.runs}, AuditEvent ${size.rows[0]?.audit}`,
        command: COMMAND,
      }),
    );

    const history = new hub.SyncHistory(db);
    const audit = new hub.AuditLog(db);
    const pick = <T>(list: readonly T[]): T => list[Math.floor(Math.random() * list.length)] as T;
    // A random week of the year (the cluster question: "what ran on this cluster that week").
    const week = () => {
      const from = fixture.spanStart + Math.random() * (fixture.spanMs - 7 * DAY_MS);
      return { from: new Date(from).toISOString(), to: new Date(from + 7 * DAY_MS).toISOString() };
    };
    const syncRuns = (query: Record<string, string>) => history.list(hub.syncHistoryQuery.parse(query));
    const cases: QueryCase[] = [
      {
        id: 'history.cluster-week',
        title: 'Sync runs: cluster + a week (random week of the year)',
        table: 'SyncRun',
        run: () => syncRuns({ cluster: pick(fixture.clusters), ...week() }),
      },
      {
        id: 'history.appset-failed',
        title: 'Sync runs: appset + outcome Failed (any time)',
        table: 'SyncRun',
        run: () => syncRuns({ appSet: pick(fixture.appSets), outcome: 'Failed' }),
      },
      {
        id: 'history.fleet-wide-appset-failed',
        title: `Sync runs: fleet-wide appset (${CLUSTERS} targets) + outcome Failed,Partial`,
        table: 'SyncRun',
        run: () =>
          syncRuns({ appSet: pick(fixture.appSets.slice(0, FLEET_WIDE_APPSETS)), outcome: 'Failed,Partial' }),
      },
      {
        id: 'history.newest',
        title: 'Sync runs: newest page, no filter',
        table: 'SyncRun',
        run: () => syncRuns({}),
      },
      {
        id: 'history.deep-cursor',
        title: 'Sync runs: a page from a cursor in the older half of the year',
        table: 'SyncRun',
        run: () => {
          const row = pick(fixture.oldRuns);
          return syncRuns({ cursor: historyCursor(row.startedAt, row.id) });
        },
      },
      {
        id: 'history.cluster-deep-cursor',
        title: 'Sync runs: cluster, a page from a cursor in the older half of the year',
        table: 'SyncRun',
        run: () => {
          const row = pick(fixture.oldRuns);
          return syncRuns({ cluster: pick(fixture.clusters), cursor: historyCursor(row.startedAt, row.id) });
        },
      },
      {
        id: 'audit.person',
        title: 'Audit: actor (a person)',
        table: 'AuditEvent',
        run: () => audit.list({ actor: pick(fixture.people), limit: 100 }),
      },
      {
        id: 'audit.agent',
        title: 'Audit: actor (a cluster agent)',
        table: 'AuditEvent',
        run: () => audit.list({ actor: pick(fixture.agentActors), limit: 100 }),
      },
      {
        id: 'audit.action-month',
        title: 'Audit: action prefix + 30 days (breakglass., rollout., pin., sync.failed)',
        table: 'AuditEvent',
        run: () => {
          const from = fixture.spanStart + Math.random() * (fixture.spanMs - 30 * DAY_MS);
          return audit.list({
            action: pick(['breakglass.', 'rollout.', 'pin.', 'sync.failed']),
            from: new Date(from),
            to: new Date(from + 30 * DAY_MS),
            limit: 100,
          });
        },
      },
      {
        id: 'audit.newest',
        title: 'Audit: newest page, no filter',
        table: 'AuditEvent',
        run: () => audit.list({ limit: 100 }),
      },
      {
        id: 'audit.deep-cursor',
        title: 'Audit: a page from a cursor in the older half',
        table: 'AuditEvent',
        run: () =>
          audit.list({
            cursor: String(
              fixture.minAuditId +
                Math.floor((Math.random() * (fixture.maxAuditId - fixture.minAuditId)) / 2),
            ),
            limit: 100,
          }),
      },
    ];

    const measure = { sql, recorder, samples, progress: ctx.progress };
    const before = await measureCases(cases, measure, { id: '', title: '' });
    figures.push(...before.figures);
    remarks.push(...before.remarks);

    // Retention as the hub runs it, then every query again on what is left.
    const retained = await runRetention(hub, db, sql, fixture, ctx.progress);
    figures.push(retained.figure);
    const after = await measureCases(cases, measure, {
      id: '.after-retention',
      title: ` — after retention dropped the older half year`,
    });
    figures.push(...after.figures);
    remarks.push(...after.remarks);
    remarks.unshift(
      `${runs.toLocaleString('en-US')} sync runs over ${CLUSTERS} clusters and ${APPSETS} appsets (${FLEET_WIDE_APPSETS} on every cluster, the others on ${CLUSTERS / APPSET_SPREAD} clusters each), ` +
        `a year of start times in insertion order, in monthly partitions (the hub's: by when the hub stored each run, and each event's time); outcomes 94 % Succeeded, 3 % Failed, 1 % Partial, 2 % Blocked; triggers 85 % auto, 8 % self-heal, 5 % manual, 2 % rollback. ` +
        `${auditEvents.toLocaleString('en-US')} audit events over the same year: 63 % sync results by the cluster agents, 34 % health changes, 3 % actions by ${PEOPLE} people; hash columns filled but not a valid chain (verify is not timed). ` +
        `Each query: ${samples} calls of the hub's own query code (\`SyncHistory.list\` with the controller's query schema, \`AuditLog.list\`) after 3 warm-up calls, with fresh random parameters each call; tables in the OS cache, not PostgreSQL's 128 MB shared buffers. ` +
        `Then the hub's RetentionService keeps the newest half year of sync runs (${retained.notes}), and every query is timed again (\`.after-retention\` figures).`,
    );
    remarks.push(machineShare(loadAtStart));
    return { figures, series: [], remarks };
  } finally {
    recorder.uninstall();
    await sql.end().catch(() => undefined);
    await db?.close().catch(() => undefined);
    await dropDatabase().catch(() => undefined);
    forget();
  }
};

/**
 * The load averages at the start and end of the run: a load above the machine's cores means other
 * work shared them, and the figures carry its queueing.
 */
function machineShare(atStart: number[]): string {
  const atEnd = loadavg();
  const shared = Math.max(atStart[0] ?? 0, atEnd[0] ?? 0, atEnd[2] ?? 0) > cpus().length;
  return (
    `Load average (1, 5, 15 min) at the start ${atStart.map((n) => n.toFixed(1)).join(', ')}, at the end ${atEnd.map((n) => n.toFixed(1)).join(', ')}` +
    (shared
      ? ': other work shared the machine during this run, so the times include waiting for a core.'
      : ': the machine was otherwise quiet.')
  );
}

interface Measure {
  sql: pg.Client;
  recorder: QueryRecorder;
  samples: number;
  progress: (line: string) => void;
}

/** Times each case through the hub's code, with the floor and plan of its main statement. */
async function measureCases(
  cases: QueryCase[],
  measure: Measure,
  suffix: { id: string; title: string },
): Promise<{ figures: Figure[]; remarks: string[] }> {
  const { sql, recorder, samples, progress } = measure;
  const figures: Figure[] = [];
  const remarks: string[] = [];
  recorder.install();
  try {
    for (const c of cases) {
      // Warm-up: the plan cache of the connection and the pages of the indexes the query walks.
      for (let i = 0; i < 3; i++) await c.run();
      const ms: number[] = [];
      const mainStatements: SentQuery[] = [];
      let empty = 0;
      let statements = 0;
      for (let i = 0; i < samples; i++) {
        recorder.recording = [];
        const start = performance.now();
        const page = await c.run();
        ms.push(performance.now() - start);
        if (page.items.length === 0) empty++;
        statements = recorder.recording.length;
        const main = recorder.recording.filter((q) => q.text.includes(`"${c.table}"`)).at(-1);
        if (main) mainStatements.push(main);
      }
      recorder.recording = undefined;
      // The floor: the same statements (the one that reads the big table, as the hub sent it) run
      // alone over a bare pg connection — the database's share, without Prisma and the other lookups.
      const floor: number[] = [];
      for (const q of mainStatements) {
        const start = performance.now();
        await sql.query(q.text, q.values);
        floor.push(performance.now() - start);
      }
      // The plan of the slowest call's statement: the one that decides the tail.
      const slowest = mainStatements[floor.indexOf(Math.max(...floor))];
      const plan = slowest ? await explain(sql, slowest) : ['(no statement recorded)'];
      const s = summarize(ms);
      const f = figure({
        id: `${c.id}${suffix.id}`,
        bench: BENCH,
        title: `${c.title}${suffix.title}`,
        unit: 'ms',
        fleetSize: CLUSTERS,
        samples: ms,
        target: P95_UNDER_50_MS,
        floor: { what: 'the main statement alone over pg', samples: floor },
        notes: `p50 ${s.median.toFixed(1)}, p95 ${s.p95.toFixed(1)}, p99 ${s.p99.toFixed(1)} ms; ${statements} SQL statements per call; the main statement alone: p50 ${floor.length ? summarize(floor).median.toFixed(1) : '—'}, p95 ${floor.length ? summarize(floor).p95.toFixed(1) : '—'} ms${empty ? `; ${empty} of ${samples} pages empty` : ''}`,
        command: COMMAND,
      });
      figures.push(f);
      progress(`${c.id}${suffix.id}: ${f.notes ?? ''} → ${f.verdict}`);
      remarks.push(
        [
          `Plan of “${c.title}${suffix.title}”: EXPLAIN (ANALYZE, BUFFERS) of the statement the hub sent in the call whose statement ran slowest alone, with its parameters:`,
          '',
          '  ```text',
          ...plan.map((line) => `  ${line}`),
          '  ```',
        ].join('\n'),
      );
    }
  } finally {
    recorder.uninstall();
  }
  return { figures, remarks };
}

function monthStartUtc(ms: number): Date {
  const d = new Date(ms);
  return new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1));
}

/**
 * The hub's RetentionService keeping the newest half year of sync runs, with the cutoff on a month's
 * first day: in steady state hourly runs leave at most an hour of rows in the cutoff's month to delete
 * by row, and a first run's catch-up is not what is measured here. The audit months before the same
 * cutoff go as an archive prune through them drops them (the bench's hash columns are filler, not a
 * chain an archive would verify, so the partitions are dropped by the prune's own function).
 */
async function runRetention(
  hub: HubModules,
  db: HubDatabase,
  sql: pg.Client,
  fixture: Fixture,
  progress: (line: string) => void,
): Promise<{ figure: Figure; notes: string }> {
  const days = 183;
  const cutoff = monthStartUtc(fixture.spanStart + fixture.spanMs / 2);
  const now = new Date(cutoff.getTime() + days * DAY_MS);
  const config = hub.loadHubConfig({
    FLOTILLA_DEV_MODE: '1',
    RETENTION_SYNC_RUN_DAYS: String(days),
    RETENTION_BATCH_SIZE: '100000',
  });
  const retention = new hub.RetentionService(db, new hub.AuditLog(db), new hub.HubMetrics(db), config);
  const t = performance.now();
  const counts = await retention.run(now);
  const audit = await hub.dropMonthPartitionsBefore(db.prisma, 'AuditEvent', cutoff);
  const seconds = (performance.now() - t) / 1000;
  const notes =
    `${counts.syncRunPartitionsDropped} months of sync runs dropped (${counts.syncRunsDeleted.toLocaleString('en-US')} runs), ` +
    `${audit.partitions.length} months of audit events (${audit.rows.toLocaleString('en-US')} events), cutoff ${cutoff.toISOString().slice(0, 10)}`;
  progress(`retention: ${notes} in ${seconds.toFixed(1)} s`);
  fixture.spanStart = cutoff.getTime();
  fixture.spanMs = Date.now() - cutoff.getTime();
  fixture.oldRuns = await sampleOldRuns(
    sql,
    fixture.spanStart,
    fixture.spanMs,
    fixture.oldRuns.length || 200,
  );
  const ids = await sql.query<{ min: string | null; max: string | null }>(
    'SELECT min(id)::text AS min, max(id)::text AS max FROM "AuditEvent"',
  );
  fixture.minAuditId = Number(ids.rows[0]?.min ?? 1);
  fixture.maxAuditId = Number(ids.rows[0]?.max ?? 1);
  const figure_ = figure({
    id: 'history.retention-seconds',
    bench: BENCH,
    title: 'Retention: drop the months of sync runs and audit events older than half a year',
    unit: 's',
    fleetSize: CLUSTERS,
    samples: [seconds],
    notes,
    command: COMMAND,
  });
  return { figure: figure_, notes };
}

/** Up to `limit` real runs that started in the older half of the span, for deep cursors. */
async function sampleOldRuns(sql: pg.Client, spanStart: number, spanMs: number, limit: number) {
  const total = Number(
    (await sql.query<{ n: string }>('SELECT count(*)::text AS n FROM "SyncRun"')).rows[0]?.n ?? 1,
  );
  return (
    await sql.query<{ startedAt: Date; id: string }>(
      `SELECT "startedAt", "id" FROM "SyncRun" TABLESAMPLE SYSTEM (${Math.min(100, 4e5 / Math.max(total, 1))}) REPEATABLE (7)
        WHERE "startedAt" >= $1 AND "startedAt" < $2 LIMIT ${limit}`,
      [new Date(spanStart), new Date(spanStart + spanMs / 2)],
    )
  ).rows;
}

/** The hub's sync-history cursor: base64url of `startedAt|id` (sync-history.service.ts). */
function historyCursor(startedAt: Date, id: string): string {
  return Buffer.from(`${startedAt.toISOString()}|${id}`).toString('base64url');
}

async function explain(sql: pg.Client, q: SentQuery): Promise<string[]> {
  const r = await sql.query<{ 'QUERY PLAN': string }>(`EXPLAIN (ANALYZE, BUFFERS) ${q.text}`, q.values);
  return r.rows.map((row) => row['QUERY PLAN']);
}

/**
 * Drops a table's indexes (and the constraints they back) and returns the statements that rebuild
 * them exactly: bulk-loading into a bare heap and sorting each index once is many times faster
 * than ten million random inserts into B-trees.
 */
async function dropIndexes(sql: pg.Client, table: string): Promise<string[]> {
  const { rows } = await sql.query<{ name: string; def: string; con: string | null; condef: string | null }>(
    `SELECT c.relname AS name, pg_get_indexdef(i.indexrelid) AS def,
            con.conname AS con, pg_get_constraintdef(con.oid) AS condef
       FROM pg_index i
       JOIN pg_class c ON c.oid = i.indexrelid
       LEFT JOIN pg_constraint con ON con.conindid = i.indexrelid AND con.conrelid = i.indrelid
      WHERE i.indrelid = $1::regclass`,
    [`"${table}"`],
  );
  const rebuild: string[] = [];
  for (const r of rows) {
    if (r.con) {
      await sql.query(`ALTER TABLE "${table}" DROP CONSTRAINT "${r.con}"`);
      rebuild.push(`ALTER TABLE "${table}" ADD CONSTRAINT "${r.con}" ${r.condef ?? ''}`);
    } else {
      await sql.query(`DROP INDEX "${r.name}"`);
      // A partitioned table's index prints as ON ONLY (the parent alone); rebuilt, it spans every month.
      rebuild.push(r.def.replace(' ON ONLY ', ' ON '));
    }
  }
  return rebuild;
}

/** Clusters, appsets and targets, then the runs and audit events, all INSERT … SELECT. */
async function load(
  sql: pg.Client,
  runs: number,
  auditEvents: number,
  yearStart: number,
  progress: (line: string) => void,
): Promise<Fixture> {
  const step = async (what: string, text: string) => {
    const t = performance.now();
    await sql.query(text);
    progress(`${what}: ${((performance.now() - t) / 1000).toFixed(1)} s`);
  };
  // The load is the bench's own data: foreign keys need not be checked row by row (session-local).
  await sql.query(`SET session_replication_role = replica`);
  // Enough for the ten-million-row index sorts to stay in memory rather than spill to disk.
  await sql.query(`SET maintenance_work_mem = '1GB'`);
  await sql.query(`SELECT setseed(0.42)`);
  const start = `'${new Date(yearStart).toISOString()}'::timestamptz`;

  await step(
    'clusters, appsets, targets',
    `
    CREATE TEMP TABLE bench_cluster AS
      SELECT n, gen_random_uuid()::text AS id, 'cluster-' || lpad(n::text, 4, '0') AS name
        FROM generate_series(0, ${CLUSTERS - 1}) n;
    INSERT INTO "Cluster" ("id", "name", "labels", "updatedAt")
      SELECT id, name, jsonb_build_object('region', 'region-' || (n % 8), 'tier', CASE WHEN n < 20 THEN 'canary' ELSE 'prod' END), now()
        FROM bench_cluster;
    CREATE TEMP TABLE bench_appset AS
      SELECT n, gen_random_uuid()::text AS id, 'appset-' || lpad(n::text, 3, '0') AS name
        FROM generate_series(0, ${APPSETS - 1}) n;
    INSERT INTO "ApplicationSet" ("id", "name", "apiVersion", "spec", "repoUrls", "status", "updatedAt")
      SELECT id, name, 'flotilla.dev/v1alpha1', '{}'::jsonb, '{}', 'Ready', now() FROM bench_appset;
    CREATE TEMP TABLE bench_target AS
      SELECT (row_number() OVER (ORDER BY a.n, c.n) - 1)::int AS n, gen_random_uuid()::text AS id,
             a.name || '-' || c.name AS name, a.id AS "appSetId", c.id AS "clusterId", a.name AS app
        FROM bench_appset a JOIN bench_cluster c
          ON a.n < ${FLEET_WIDE_APPSETS} OR c.n % ${APPSET_SPREAD} = a.n % ${APPSET_SPREAD};
    CREATE UNIQUE INDEX ON bench_target (n);
    INSERT INTO "Target" ("id", "name", "appSetId", "clusterId", "namespace", "repoUrl", "sourcePath",
                          "targetRevision", "desiredRevision", "syncPolicy", "health", "updatedAt")
      SELECT id, name, "appSetId", "clusterId", app, 'https://git.example.com/fleet.git', 'apps/' || app,
             'main', md5(app), '{"automated":{"selfHeal":true}}', 'Healthy', now()
        FROM bench_target;
    ANALYZE bench_target;`,
  );
  const targets = Number(
    (await sql.query<{ n: string }>('SELECT count(*) AS n FROM bench_target')).rows[0]?.n,
  );

  // SyncRun.appSetId (copied from the target on insert) is filled when the schema has it.
  const hasAppSetId =
    (
      await sql.query(
        `SELECT 1 FROM information_schema.columns WHERE table_name = 'SyncRun' AND column_name = 'appSetId'`,
      )
    ).rowCount === 1;
  const runIndexes = await dropIndexes(sql, 'SyncRun');
  // Start times advance with the row number (history is inserted as it happens), a few minutes of
  // jitter; a random target per run.
  await step(
    `${runs.toLocaleString('en-US')} sync runs`,
    `
    INSERT INTO "SyncRun" ("id", "targetId", "clusterId", "revision", "bundleDigest", "trigger", "outcome",
                           "message", "startedAt", "finishedAt", "resources", "agentReportId", "createdAt"${hasAppSetId ? ', "appSetId"' : ''})
    SELECT gen_random_uuid()::text, t.id, t."clusterId", md5((g.i / 20000)::text),
           'sha256:' || md5(t.app || (g.i / 20000)) || md5((g.i / 20000)::text),
           CASE WHEN g.v < 0.85 THEN 'auto' WHEN g.v < 0.93 THEN 'self-heal' WHEN g.v < 0.98 THEN 'manual' ELSE 'rollback' END,
           CASE WHEN g.u < 0.94 THEN 'Succeeded' WHEN g.u < 0.97 THEN 'Failed' WHEN g.u < 0.98 THEN 'Partial' ELSE 'Blocked' END,
           CASE WHEN g.u < 0.94 THEN '' WHEN g.u < 0.98 THEN 'Deployment/' || t.app || ': apply failed: admission webhook denied the request' ELSE 'outside sync window' END,
           g.at, g.at + (2 + g.v * 60) * interval '1 second',
           '[{"kind":"Deployment","name":"web","result":"configured"},{"kind":"Service","name":"web","result":"unchanged"}]'::jsonb,
           gen_random_uuid()::text, g.at + (2 + g.v * 60) * interval '1 second'${hasAppSetId ? ', t."appSetId"' : ''}
      FROM (SELECT i, random() AS u, random() AS v, floor(random() * ${targets})::int AS tn,
                   ${start} + (i::float8 / ${runs}) * interval '365 days' + random() * interval '5 minutes' AS at
              FROM generate_series(1, ${runs}) i) g
      JOIN bench_target t ON t.n = g.tn`,
  );
  for (const def of runIndexes) await step(`  ${def.slice(0, 90)}`, def);

  const auditIndexes = await dropIndexes(sql, 'AuditEvent');
  await step(
    `${auditEvents.toLocaleString('en-US')} audit events`,
    `
    INSERT INTO "AuditEvent" ("at", "actor", "action", "scope", "details", "prevHash", "hash")
    SELECT g.at,
           CASE WHEN g.u < 0.63 THEN 'agent:' || t."clusterId" WHEN g.u < 0.97 THEN 'agent'
                ELSE 'person-' || lpad((floor(g.v * ${PEOPLE}))::int::text, 2, '0') || '@example.com' END,
           CASE WHEN g.u < 0.60 THEN 'sync.succeeded' WHEN g.u < 0.62 THEN 'sync.failed' WHEN g.u < 0.63 THEN 'sync.blocked'
                WHEN g.u < 0.97 THEN 'health.changed'
                ELSE (ARRAY['appset.updated','appset.created','window.updated','breakglass.opened','breakglass.closed',
                            'rollout.paused','rollout.promoted','pin.added','pin.removed','cluster.registered'])[1 + floor(g.v * 10)::int] END,
           'target:' || t.name,
           CASE WHEN g.u < 0.63 THEN jsonb_build_object('revision', md5((g.i / 20000)::text), 'trigger', 'auto', 'message', '', 'reportId', gen_random_uuid())
                WHEN g.u < 0.97 THEN jsonb_build_object('from', 'Progressing', 'to', 'Healthy', 'message', '')
                ELSE jsonb_build_object('reason', 'change ticket CHG-' || g.i) END,
           md5((g.i - 1)::text) || md5((1 - g.i)::text), md5(g.i::text) || md5((-g.i)::text)
      FROM (SELECT i, random() AS u, random() AS v, floor(random() * ${targets})::int AS tn,
                   ${start} + (i::float8 / ${auditEvents}) * interval '365 days' AS at
              FROM generate_series(1, ${auditEvents}) i) g
      JOIN bench_target t ON t.n = g.tn
     ORDER BY g.i`,
  );
  for (const def of auditIndexes) await step(`  ${def.slice(0, 90)}`, def);
  await sql.query(`SET session_replication_role = DEFAULT`);
  // What autovacuum would have done long ago on a year-old table: visibility map and statistics.
  await step(
    'VACUUM ANALYZE',
    'VACUUM ANALYZE "SyncRun", "AuditEvent", "Target", "Cluster", "ApplicationSet"',
  );

  const names = async (q: string) => (await sql.query<{ v: string }>(q)).rows.map((r) => r.v);
  const oldRuns = await sampleOldRuns(sql, yearStart, YEAR_MS, 200);
  return {
    clusters: await names('SELECT name AS v FROM bench_cluster'),
    appSets: await names('SELECT name AS v FROM bench_appset ORDER BY n'),
    people: Array.from({ length: PEOPLE }, (_, i) => `person-${String(i).padStart(2, '0')}@example.com`),
    agentActors: await names(`SELECT 'agent:' || id AS v FROM bench_cluster`),
    oldRuns,
    minAuditId: 1,
    maxAuditId: Number(
      (await sql.query<{ n: string | null }>('SELECT max(id)::text AS n FROM "AuditEvent"')).rows[0]?.n ?? 0,
    ),
    spanStart: yearStart,
    spanMs: YEAR_MS,
  };
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
