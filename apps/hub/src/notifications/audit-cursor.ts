import { chainLanes } from '../audit/audit-lanes.js';
import type { AuditEvent, Prisma } from '../generated/prisma/client.js';

type Tx = Prisma.TransactionClient;

/**
 * The cursor of an audit chain lane. Lane 0 keeps the name of the one cursor there was before lanes,
 * so an upgraded hub goes on where it stopped.
 */
export function auditCursorId(lane: number): string {
  return lane === 0 ? 'audit' : `audit:lane:${lane}`;
}

/**
 * Up to `limit` audit events after their lanes' cursors, lane by lane, returned in id order; the
 * cursors move past them in the caller's transaction, so only if what the caller writes commits too.
 * A cursor per lane, because only within a lane is id order commit order: an event with a lower id
 * in another lane may commit after a higher one was read, and one cursor for all would skip it.
 */
export async function unreadAuditEvents(tx: Tx, limit: number): Promise<AuditEvent[]> {
  const lanes = await chainLanes(tx);
  const cursors = await tx.notificationCursor.findMany({ where: { id: { in: lanes.map(auditCursorId) } } });
  const after = new Map(cursors.map((c) => [c.id, c.lastAuditId]));
  const rows: AuditEvent[] = [];
  for (const lane of lanes) {
    if (rows.length >= limit) break;
    const id = auditCursorId(lane);
    const laneRows = await tx.auditEvent.findMany({
      where: { lane, id: { gt: after.get(id) ?? 0n } },
      orderBy: { id: 'asc' },
      take: limit - rows.length,
    });
    const last = laneRows.at(-1)?.id;
    if (last === undefined) continue;
    rows.push(...laneRows);
    await tx.notificationCursor.upsert({
      where: { id },
      create: { id, lastAuditId: last },
      update: { lastAuditId: last },
    });
  }
  return rows.sort((a, b) => (a.id < b.id ? -1 : 1));
}
