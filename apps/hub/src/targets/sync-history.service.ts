import { Injectable } from '@nestjs/common';
import { SYNC_OUTCOMES, SYNC_TRIGGERS } from '@flotilla/contract';
import { z } from 'zod';
import { Database } from '../db/database.js';
import { HubError } from '../common/hub-error.js';
import { Prisma } from '../generated/prisma/client.js';

const rfc3339 = z.iso.datetime({ offset: true }).transform((s) => new Date(s));

/** A comma-separated list, each item one of `allowed` (so a typo is a 400 naming the field, not an empty page). */
function listOf<T extends string>(allowed: readonly T[]) {
  return z
    .string()
    .transform((v) =>
      v
        .split(',')
        .map((x) => x.trim())
        .filter(Boolean),
    )
    .pipe(z.array(z.enum(allowed as unknown as [T, ...T[]])).min(1));
}

export const syncHistoryQuery = z.object({
  target: z.string().min(1).optional(),
  cluster: z.string().min(1).optional(),
  appSet: z.string().min(1).optional(),
  outcome: listOf(SYNC_OUTCOMES).optional(),
  trigger: listOf(SYNC_TRIGGERS).optional(),
  from: rfc3339.optional(),
  to: rfc3339.optional(),
  limit: z.coerce.number().int().min(1).max(500).default(50),
  cursor: z
    .string()
    .regex(/^[A-Za-z0-9_-]+$/, 'a cursor is the nextCursor of a previous page')
    .optional(),
});
export type SyncHistoryQuery = z.output<typeof syncHistoryQuery>;

/** One row of the history query: the run's own columns and the names of its target, cluster and appset. */
interface SyncRunRow {
  id: string;
  target: string;
  cluster: string;
  appSet: string;
  revision: string;
  bundleDigest: string;
  trigger: string;
  outcome: string;
  message: string;
  startedAt: Date;
  finishedAt: Date;
  resources: unknown;
  agentReportId: string;
}

/**
 * Sync history queries: a page is one SQL statement, two when the filter names a cluster, appset or
 * target (one statement resolves those names to ids). The run table is read through one of its
 * (clusterId | targetId | appSetId [, outcome], startedAt) indexes, newest first, and the names in
 * the answer come from joins on the page's rows. Prisma's `findMany` + `include` took four to five
 * round trips for the same page, which at ten million runs cost more than the index scan itself.
 * Paging is keyset on (startedAt, id), so a page costs the same at the start of ten million runs as
 * deep inside them.
 */
@Injectable()
export class SyncHistory {
  constructor(private readonly db: Database) {}

  async list(q: SyncHistoryQuery) {
    const where: Prisma.Sql[] = [];
    if (q.cluster || q.appSet || q.target) {
      const ids = await this.resolveNames(q);
      if (!ids) return { items: [], nextCursor: null };
      if (ids.clusterId) where.push(Prisma.sql`"clusterId" = ${ids.clusterId}`);
      if (ids.appSetId) where.push(Prisma.sql`"appSetId" = ${ids.appSetId}`);
      if (ids.targetId) where.push(Prisma.sql`"targetId" = ${ids.targetId}`);
    }
    if (q.outcome) where.push(Prisma.sql`"outcome" = ANY(${q.outcome}::text[])`);
    if (q.trigger) where.push(Prisma.sql`"trigger" = ANY(${q.trigger}::text[])`);
    // Timestamps travel as ISO text cast to `timestamp`, the column's type (UTC wall time, as Prisma
    // stores it), so no session time zone takes part in the comparison.
    if (q.from) where.push(Prisma.sql`"startedAt" >= ${q.from.toISOString()}::timestamp`);
    if (q.to) where.push(Prisma.sql`"startedAt" < ${q.to.toISOString()}::timestamp`);
    if (q.cursor) {
      const { startedAt, id } = decodeCursor(q.cursor);
      const at = startedAt.toISOString();
      // (startedAt, id) < cursor. The plain `<=` is redundant but is what PostgreSQL can start a
      // range scan of the (clusterId | targetId | appSetId, startedAt) indexes at.
      where.push(Prisma.sql`"startedAt" <= ${at}::timestamp`);
      where.push(Prisma.sql`("startedAt", "id") < (${at}::timestamp, ${id})`);
    }
    // The page is cut first and only its rows are joined for their names: joined before the LIMIT,
    // PostgreSQL may join every matching run (thousands for a fleet-wide appset) and sort them all.
    const rows = await this.db.prisma.$queryRaw<SyncRunRow[]>`
      SELECT r."id", t."name" AS "target", c."name" AS "cluster", a."name" AS "appSet",
             r."revision", r."bundleDigest", r."trigger", r."outcome", r."message",
             r."startedAt", r."finishedAt", r."resources", r."agentReportId"
        FROM (SELECT * FROM "SyncRun"
               WHERE ${where.length > 0 ? Prisma.join(where, ' AND ') : Prisma.sql`TRUE`}
               ORDER BY "startedAt" DESC, "id" DESC
               LIMIT ${q.limit + 1}) r
        JOIN "Target" t ON t."id" = r."targetId"
        JOIN "Cluster" c ON c."id" = t."clusterId"
        JOIN "ApplicationSet" a ON a."id" = t."appSetId"
       ORDER BY r."startedAt" DESC, r."id" DESC`;
    const page = rows.slice(0, q.limit);
    const last = page.at(-1);
    return {
      items: page.map((r) => ({
        id: r.id,
        target: r.target,
        cluster: r.cluster,
        appSet: r.appSet,
        revision: r.revision,
        bundleDigest: r.bundleDigest,
        trigger: r.trigger,
        outcome: r.outcome,
        message: r.message,
        startedAt: r.startedAt.toISOString(),
        finishedAt: r.finishedAt.toISOString(),
        resources: r.resources,
        reportId: r.agentReportId,
      })),
      nextCursor: rows.length > q.limit && last ? encodeCursor(last.startedAt, last.id) : null,
    };
  }

  /**
   * The ids of the names in the filter, in one statement; undefined when a name is unknown (then
   * nothing matches). A statement of their own, not subqueries of the page's: with the ids as
   * values PostgreSQL plans with their statistics — a fleet-wide appset's thousands of failed runs
   * read in index order and stopped at the page, rather than all fetched and sorted, as it planned
   * for an id it could not know in advance (35 ms for that page on two million runs).
   */
  private async resolveNames(
    q: SyncHistoryQuery,
  ): Promise<{ clusterId?: string; appSetId?: string; targetId?: string } | undefined> {
    const [ids] = await this.db.prisma.$queryRaw<
      { clusterId: string | null; appSetId: string | null; targetId: string | null }[]
    >`
      SELECT (SELECT "id" FROM "Cluster" WHERE "name" = ${q.cluster ?? null}::text) AS "clusterId",
             (SELECT "id" FROM "ApplicationSet" WHERE "name" = ${q.appSet ?? null}::text) AS "appSetId",
             (SELECT "id" FROM "Target" WHERE "name" = ${q.target ?? null}::text) AS "targetId"`;
    if ((q.cluster && !ids?.clusterId) || (q.appSet && !ids?.appSetId) || (q.target && !ids?.targetId))
      return undefined;
    return {
      ...(ids?.clusterId && { clusterId: ids.clusterId }),
      ...(ids?.appSetId && { appSetId: ids.appSetId }),
      ...(ids?.targetId && { targetId: ids.targetId }),
    };
  }
}

function encodeCursor(startedAt: Date, id: string): string {
  return Buffer.from(`${startedAt.toISOString()}|${id}`).toString('base64url');
}

function decodeCursor(cursor: string): { startedAt: Date; id: string } {
  const [at = '', id = ''] = Buffer.from(cursor, 'base64url').toString('utf8').split('|');
  const startedAt = new Date(at);
  if (Number.isNaN(startedAt.getTime()) || id === '')
    throw new HubError(
      400,
      'invalid-request',
      'invalid query: cursor: not a nextCursor of a previous page',
      'cursor',
    );
  return { startedAt, id };
}
