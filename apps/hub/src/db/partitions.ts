// The monthly partitions of the hub's record tables: create the coming months, drop whole past ones.
import type { PrismaClient } from '../generated/prisma/client.js';

/** The tables stored as monthly RANGE partitions, and the hub-clock column each is partitioned by. */
export const PARTITIONED_TABLES = { SyncRun: 'createdAt', AuditEvent: 'at' } as const;
export type PartitionedTable = keyof typeof PARTITIONED_TABLES;

/** One month's partition: rows with `from` <= key < `to` (UTC). */
export interface MonthPartition {
  name: string;
  from: Date;
  to: Date;
}

/** Every partition change takes this transaction lock, so replicas take turns ("parts" in ASCII). */
const PARTITION_LOCK = 0x70617274;
/**
 * DDL on a partition waits for the parent's lock; behind a long query it would make every later
 * query wait too. Past this, the statement gives up and the next run tries again.
 */
const LOCK_TIMEOUT = '5s';

type Client = Pick<PrismaClient, '$queryRawUnsafe' | '$executeRawUnsafe' | '$transaction'>;

const ident = (name: string) => `"${name}"`;
const sqlTime = (d: Date) => `'${d.toISOString().slice(0, 23).replace('T', ' ')}'`;
const monthStart = (d: Date, plus = 0) => new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + plus, 1));
export const monthPartitionName = (table: PartitionedTable, month: Date) =>
  `${table}_p${month.getUTCFullYear()}_${String(month.getUTCMonth() + 1).padStart(2, '0')}`;
export const defaultPartitionName = (table: PartitionedTable) => `${table}_default`;

/** A bound as PostgreSQL prints it ('2026-12-01 00:00:00'): the column holds UTC without a zone. */
function parseBound(text: string): Date {
  return new Date(`${text.replace(' ', 'T')}Z`);
}

/** The table's month partitions, oldest first (the DEFAULT partition is not one of them). */
export async function listMonthPartitions(db: Client, table: PartitionedTable): Promise<MonthPartition[]> {
  const rows = await db.$queryRawUnsafe<{ name: string; bound: string }[]>(
    `SELECT c.relname AS name, pg_get_expr(c.relpartbound, c.oid) AS bound
       FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
      WHERE i.inhparent = $1::regclass`,
    ident(table),
  );
  const out: MonthPartition[] = [];
  for (const r of rows) {
    const m = /^FOR VALUES FROM \('([^']+)'\) TO \('([^']+)'\)$/.exec(r.bound);
    if (m) out.push({ name: r.name, from: parseBound(m[1]!), to: parseBound(m[2]!) });
  }
  return out.sort((a, b) => a.from.getTime() - b.from.getTime());
}

/**
 * Makes sure the month of `now` and the `monthsAhead` after it have a partition (and the table its
 * DEFAULT partition); returns the partitions it created. Idempotent, and safe with replicas doing
 * the same at once: a transaction lock makes them take turns and the second finds nothing to do.
 * Rows that landed in DEFAULT for a month (the keeper had not run) move into the month's partition.
 */
export async function ensureMonthPartitions(
  db: Client,
  table: PartitionedTable,
  now: Date,
  monthsAhead: number,
): Promise<string[]> {
  const wanted = Array.from({ length: monthsAhead + 1 }, (_, i) => monthStart(now, i));
  const missing = (have: MonthPartition[]) =>
    wanted.filter((m) => !have.some((p) => p.from <= m && m < p.to));
  if (missing(await listMonthPartitions(db, table)).length === 0) return [];
  return db.$transaction(
    async (tx) => {
      await tx.$executeRawUnsafe(`SELECT pg_advisory_xact_lock(${PARTITION_LOCK})`);
      await tx.$executeRawUnsafe(`SET LOCAL lock_timeout = '${LOCK_TIMEOUT}'`);
      await tx.$executeRawUnsafe(
        `CREATE TABLE IF NOT EXISTS ${ident(defaultPartitionName(table))} PARTITION OF ${ident(table)} DEFAULT`,
      );
      const created: string[] = [];
      for (const month of missing(await listMonthPartitions(tx, table))) {
        await createMonth(tx, table, month);
        created.push(monthPartitionName(table, month));
      }
      return created;
    },
    { timeout: 60_000 },
  );
}

/**
 * One month's partition. While DEFAULT holds rows of that month PostgreSQL refuses to create it, so
 * then it is built beside the table, the rows moved in, and attached, all in the caller's transaction.
 */
async function createMonth(tx: Client, table: PartitionedTable, month: Date): Promise<void> {
  const name = ident(monthPartitionName(table, month));
  const key = ident(PARTITIONED_TABLES[table]);
  const from = sqlTime(month);
  const to = sqlTime(monthStart(month, 1));
  const inDefault = `FROM ${ident(defaultPartitionName(table))} WHERE ${key} >= ${from} AND ${key} < ${to}`;
  const [stray] = await tx.$queryRawUnsafe<{ any: boolean }[]>(
    `SELECT EXISTS (SELECT 1 ${inDefault}) AS "any"`,
  );
  if (!stray?.any) {
    await tx.$executeRawUnsafe(
      `CREATE TABLE ${name} PARTITION OF ${ident(table)} FOR VALUES FROM (${from}) TO (${to})`,
    );
    return;
  }
  await tx.$executeRawUnsafe(`CREATE TABLE ${name} (LIKE ${ident(table)} INCLUDING DEFAULTS)`);
  await tx.$executeRawUnsafe(
    `WITH moved AS (DELETE ${inDefault} RETURNING *) INSERT INTO ${name} SELECT * FROM moved`,
  );
  await tx.$executeRawUnsafe(
    `ALTER TABLE ${ident(table)} ATTACH PARTITION ${name} FOR VALUES FROM (${from}) TO (${to})`,
  );
}

/** What dropping partitions removed. */
export interface DroppedPartitions {
  partitions: string[];
  rows: number;
}

/** An audit chain lane archived through `throughId` (AuditEvent rows of `lane` up to it may go). */
export interface ArchivedLane {
  lane: number;
  throughId: bigint;
}

/**
 * Drops every month partition whose whole range ends at or before `endsBy`. With `archivedThrough`,
 * a partition holding any row that is not at or before its lane's cut is kept (checked under the
 * lock that the drop takes, so a row committed meanwhile counts). Each drop is its own short
 * transaction; one that cannot get its locks in time is left for the next run.
 */
export async function dropMonthPartitionsBefore(
  db: Client,
  table: PartitionedTable,
  endsBy: Date,
  archivedThrough?: readonly ArchivedLane[],
): Promise<DroppedPartitions> {
  const dropped: DroppedPartitions = { partitions: [], rows: 0 };
  for (const p of await listMonthPartitions(db, table)) {
    if (p.to > endsBy) continue;
    // Counted before the locks (a month this old takes no new rows): a count under them would
    // keep every reader of the table waiting for as long as the scan takes.
    const [counted] = await db.$queryRawUnsafe<{ n: number }[]>(
      `SELECT count(*)::int AS n FROM ${ident(p.name)}`,
    );
    const done = await dropOne(db, table, p.name, archivedThrough);
    if (!done) continue;
    dropped.partitions.push(p.name);
    dropped.rows += counted?.n ?? 0;
  }
  return dropped;
}

/** Drops one partition under the locks; false when it was gone, kept, or its locks did not come in time. */
async function dropOne(
  db: Client,
  table: PartitionedTable,
  name: string,
  archivedThrough?: readonly ArchivedLane[],
): Promise<boolean> {
  try {
    return await db.$transaction(async (tx) => {
      await tx.$executeRawUnsafe(`SELECT pg_advisory_xact_lock(${PARTITION_LOCK})`);
      const [exists] = await tx.$queryRawUnsafe<{ ok: boolean }[]>(
        `SELECT to_regclass($1) IS NOT NULL AS ok`,
        ident(name),
      );
      if (!exists?.ok) return false;
      await tx.$executeRawUnsafe(`SET LOCAL lock_timeout = '${LOCK_TIMEOUT}'`);
      // The parent first, as every insert takes them, so the two never wait on each other in a loop.
      await tx.$executeRawUnsafe(`LOCK TABLE ${ident(table)}, ${ident(name)} IN ACCESS EXCLUSIVE MODE`);
      if (archivedThrough !== undefined) {
        const [unarchived] = await tx.$queryRawUnsafe<{ any: boolean }[]>(
          `SELECT EXISTS (
             SELECT 1 FROM ${ident(name)} e
              WHERE NOT EXISTS (SELECT 1 FROM unnest($1::int[], $2::bigint[]) AS c("lane", "throughId")
                                 WHERE c."lane" = e."lane" AND e."id" <= c."throughId")) AS "any"`,
          archivedThrough.map((c) => c.lane),
          archivedThrough.map((c) => c.throughId),
        );
        if (unarchived?.any) return false;
      }
      await tx.$executeRawUnsafe(`DROP TABLE ${ident(name)}`);
      return true;
    });
  } catch (e) {
    if (e instanceof Error && /lock timeout/i.test(e.message)) return false;
    throw e;
  }
}

/** Months the keeper keeps ready beyond the current one, so a quiet month never starts without its partition. */
export const MONTHS_AHEAD = 3;

/** The keeper's one pass: every partitioned table has this month and the next MONTHS_AHEAD. */
export async function keepPartitionsAhead(db: Client, now: Date = new Date()): Promise<string[]> {
  const created: string[] = [];
  for (const table of Object.keys(PARTITIONED_TABLES) as PartitionedTable[]) {
    created.push(...(await ensureMonthPartitions(db, table, now, MONTHS_AHEAD)));
  }
  return created;
}
