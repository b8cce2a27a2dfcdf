import { Injectable } from '@nestjs/common';
import { SYNC_OUTCOMES, SYNC_TRIGGERS, type SyncRunPageView, type SyncRunView } from '@flotilla/contract';
import { z } from 'zod';
import { Database } from '../db/database.js';
import { HubError } from '../common/hub-error.js';
import { everyItem } from '../common/record-export.js';
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

/** Runs in a page when the query names no limit. */
export const HISTORY_PAGE = 50;

export const syncHistoryQuery = z.object({
  target: z.string().min(1).optional(),
  cluster: z.string().min(1).optional(),
  appSet: z.string().min(1).optional(),
  outcome: listOf(SYNC_OUTCOMES).optional(),
  trigger: listOf(SYNC_TRIGGERS).optional(),
  /** The run that carried out this requested sync (its operation id). */
  operation: z.string().min(1).max(100).optional(),
  from: rfc3339.optional(),
  to: rfc3339.optional(),
  limit: z.coerce.number().int().min(1).max(500).default(HISTORY_PAGE),
  cursor: z
    .string()
    .regex(/^[A-Za-z0-9_-]+$/, 'a cursor is the nextCursor of a previous page')
    .optional(),
});
export type SyncHistoryQuery = z.output<typeof syncHistoryQuery>;

/** One row of the history query: the view's fields as the database gives them (dates, the report's own id). */
type SyncRunRow = Omit<SyncRunView, 'startedAt' | 'finishedAt' | 'reportId' | 'dryRun' | 'operationId'> & {
  operationId: string | null;
  startedAt: Date;
  finishedAt: Date;
  agentReportId: string;
  dryRun: boolean;
};

/**
 * Sync history queries: a page is one SQL statement, two when the filter names a cluster or appset
 * (one statement resolves those names to ids). The run table is read through one of its
 * (clusterId | targetName | appSetId [, outcome], startedAt [, id]) indexes, newest first, and the
 * names in the answer are the run's own. Prisma's `findMany` + `include` took four to five
 * round trips for the same page, which at ten million runs cost more than the index scan itself.
 * Paging is keyset on (startedAt, id), so a page costs the same at the start of ten million runs as
 * deep inside them.
 */
@Injectable()
export class SyncHistory {
  constructor(private readonly db: Database) {}

  /** Every matching run (at most `limit`), newest first, fetched a page at a time for export. */
  stream(q: Omit<SyncHistoryQuery, 'limit'> & { limit?: number | undefined }): AsyncGenerator<SyncRunView> {
    return everyItem((cursor, limit) => this.list({ ...q, cursor, limit }), q);
  }

  async list(q: SyncHistoryQuery): Promise<SyncRunPageView> {
    const where: Prisma.Sql[] = [];
    let byAppSetId = false;
    if (q.cluster || q.appSet) {
      const ids = await this.resolveNames(q);
      byAppSetId = ids.appSetId !== undefined;
      // A cluster or appset still in the inventory is read by id (its indexes); one deleted since
      // only by the name copied on its runs (a scan along the time index, stopped at the page).
      if (ids.clusterId) where.push(Prisma.sql`"clusterId" = ${ids.clusterId}`);
      else if (q.cluster) where.push(Prisma.sql`"clusterName" = ${q.cluster}`);
      if (ids.appSetId) where.push(Prisma.sql`"appSetId" = ${ids.appSetId}`);
      else if (q.appSet) where.push(Prisma.sql`"appSetName" = ${q.appSet}`);
    }
    // A target by name: every run under that name, on every cluster it moved through, deleted or not.
    if (q.target) where.push(Prisma.sql`"targetName" = ${q.target}`);
    // An appset's outcomes are each read from the (appSetId, outcome, startedAt, id) index (pageStatement).
    const outcomes = q.outcome && byAppSetId ? [...new Set(q.outcome)] : [];
    if (q.outcome && outcomes.length === 0) where.push(Prisma.sql`"outcome" = ANY(${q.outcome}::text[])`);
    if (q.trigger) where.push(Prisma.sql`"trigger" = ANY(${q.trigger}::text[])`);
    if (q.operation) where.push(Prisma.sql`"operationId" = ${q.operation}`);
    // Timestamps travel as ISO text cast to `timestamp`, the column's type (UTC wall time, as Prisma
    // stores it), so no session time zone takes part in the comparison.
    if (q.from) where.push(Prisma.sql`"startedAt" >= ${q.from.toISOString()}::timestamp`);
    if (q.to) where.push(Prisma.sql`"startedAt" < ${q.to.toISOString()}::timestamp`);
    if (q.cursor) {
      const { startedAt, id } = decodeCursor(q.cursor);
      const at = startedAt.toISOString();
      // (startedAt, id) < cursor. The plain `<=` is redundant but is what PostgreSQL can start a
      // range scan of the (clusterId | targetName | appSetId, startedAt) indexes at.
      where.push(Prisma.sql`"startedAt" <= ${at}::timestamp`);
      where.push(Prisma.sql`("startedAt", "id") < (${at}::timestamp, ${id})`);
    }
    const rows = await this.db.prisma.$queryRaw<SyncRunRow[]>(pageStatement(where, outcomes, q.limit + 1));
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
        // Only on dry runs: their resources say what a sync would have done; nothing changed.
        ...(r.dryRun && { dryRun: true }),
        // Only on runs a person asked for: the operation (POST …/sync) it carried out.
        ...(r.operationId !== null && { operationId: r.operationId }),
      })),
      nextCursor: rows.length > q.limit && last ? encodeCursor(last.startedAt, last.id) : null,
    };
  }

  /**
   * The ids of the cluster and appset names in the filter, in one statement; a name not in the
   * inventory (deleted, or never there) has none. A statement of their own, not subqueries of the
   * page's: with the ids as values PostgreSQL plans with their statistics — a fleet-wide appset's
   * thousands of failed runs read in index order and stopped at the page, rather than all fetched
   * and sorted, as it planned for an id it could not know in advance (35 ms for that page on two
   * million runs).
   */
  private async resolveNames(q: SyncHistoryQuery): Promise<{ clusterId?: string; appSetId?: string }> {
    const [ids] = await this.db.prisma.$queryRaw<{ clusterId: string | null; appSetId: string | null }[]>`
      SELECT (SELECT "id" FROM "Cluster" WHERE "name" = ${q.cluster ?? null}::text) AS "clusterId",
             (SELECT "id" FROM "ApplicationSet" WHERE "name" = ${q.appSet ?? null}::text) AS "appSetId"`;
    return {
      ...(ids?.clusterId && { clusterId: ids.clusterId }),
      ...(ids?.appSetId && { appSetId: ids.appSetId }),
    };
  }
}

/**
 * The statement of one page: the runs matching `where`, newest first by (startedAt, id), `take` of
 * them. The names are the run's own (copied when stored): history reads the same after its target,
 * cluster or appset was moved or deleted.
 *
 * With `outcomes` (an appset known by id), one branch per outcome, each `"outcome" = x` cut to
 * `take` in index order, then the branches merged and cut again: exactly the first `take` of the
 * union, as the outcomes are distinct. `"outcome" = ANY(…)` on the index's second column costs
 * PostgreSQL 15 the index order, so it walked every month's (startedAt, id) index filtering the
 * whole fleet's runs instead (thousands of rows for a page of an appset's failures, more the rarer
 * they are); per outcome, every month's index yields only matching rows, already in page order.
 */
function pageStatement(where: Prisma.Sql[], outcomes: string[], take: number): Prisma.Sql {
  const page = (conditions: Prisma.Sql[]) => Prisma.sql`
    SELECT "id", "targetName" AS "target", "clusterName" AS "cluster", "appSetName" AS "appSet",
           "revision", "bundleDigest", "trigger", "outcome", "message",
           "startedAt", "finishedAt", "resources", "agentReportId", "dryRun", "operationId"
      FROM "SyncRun"
     WHERE ${conditions.length > 0 ? Prisma.join(conditions, ' AND ') : Prisma.sql`TRUE`}
     ORDER BY "startedAt" DESC, "id" DESC
     LIMIT ${take}`;
  const [first, ...more] = outcomes.map((o) => page([...where, Prisma.sql`"outcome" = ${o}`]));
  if (!first) return page(where);
  if (more.length === 0) return first;
  return Prisma.sql`
    SELECT * FROM (${Prisma.join(
      [first, ...more].map((b) => Prisma.sql`(${b})`),
      ' UNION ALL ',
    )}) AS "pages"
     ORDER BY "startedAt" DESC, "id" DESC
     LIMIT ${take}`;
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
