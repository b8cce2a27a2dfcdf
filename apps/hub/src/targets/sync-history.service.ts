import { Injectable } from '@nestjs/common';
import { SYNC_OUTCOMES, SYNC_TRIGGERS } from '@flotilla/contract';
import { z } from 'zod';
import { Database } from '../db/database.js';
import { HubError } from '../common/hub-error.js';
import type { Prisma } from '../generated/prisma/client.js';

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

/**
 * Sync history queries. Names are resolved to ids first, so the run table is read through one of
 * its (clusterId | targetId | appSetId [, outcome], startedAt) indexes, newest first. Paging is
 * keyset on (startedAt, id), so a page costs the same at the start of ten million runs as deep
 * inside them.
 */
@Injectable()
export class SyncHistory {
  constructor(private readonly db: Database) {}

  async list(q: SyncHistoryQuery) {
    const where: Prisma.SyncRunWhereInput[] = [];
    const empty = { items: [], nextCursor: null };
    if (q.cluster) {
      const c = await this.db.prisma.cluster.findUnique({ where: { name: q.cluster }, select: { id: true } });
      if (!c) return empty;
      where.push({ clusterId: c.id });
    }
    if (q.appSet) {
      const a = await this.db.prisma.applicationSet.findUnique({
        where: { name: q.appSet },
        select: { id: true },
      });
      if (!a) return empty;
      where.push({ appSetId: a.id });
    }
    if (q.target) {
      const t = await this.db.prisma.target.findUnique({ where: { name: q.target }, select: { id: true } });
      if (!t) return empty;
      where.push({ targetId: t.id });
    }
    if (q.outcome) where.push({ outcome: { in: q.outcome } });
    if (q.trigger) where.push({ trigger: { in: q.trigger } });
    if (q.from) where.push({ startedAt: { gte: q.from } });
    if (q.to) where.push({ startedAt: { lt: q.to } });
    if (q.cursor) {
      const { startedAt, id } = decodeCursor(q.cursor);
      // (startedAt, id) < cursor. The plain `lte` is redundant but is what PostgreSQL can start an
      // index range scan at; the OR alone is only a filter, read from the newest run down.
      where.push({ startedAt: { lte: startedAt } });
      where.push({ OR: [{ startedAt: { lt: startedAt } }, { startedAt, id: { lt: id } }] });
    }
    const rows = await this.db.prisma.syncRun.findMany({
      where: { AND: where },
      orderBy: [{ startedAt: 'desc' }, { id: 'desc' }],
      take: q.limit + 1,
      include: {
        target: {
          select: { name: true, cluster: { select: { name: true } }, appSet: { select: { name: true } } },
        },
      },
    });
    const page = rows.slice(0, q.limit);
    const last = page.at(-1);
    return {
      items: page.map((r) => ({
        id: r.id,
        target: r.target.name,
        cluster: r.target.cluster.name,
        appSet: r.target.appSet.name,
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
