// Delivery rows: a single notification inserted once by its dedupe key, or an event folded into its group's digest.
import { createHash, randomUUID } from 'node:crypto';
import type { Prisma } from '../generated/prisma/client.js';
import type { NotifiedEvent } from './notification-message.js';

type Tx = Prisma.TransactionClient;

/** Events a digest row keeps (it counts them all). */
const MAX_EVENTS_PER_DELIVERY = 50;

/** A delivery row just written, which the dispatcher queues for sending after the transaction. */
export interface NewDelivery {
  id: string;
  dedupeKey: string;
  destinationId: string;
  sendAfter: Date;
}

interface DeliveryRow {
  dedupeKey: string;
  groupKey: string;
  destinationId: string;
  policyName: string;
  trigger: string;
  status: 'Collecting' | 'Pending';
  events: NotifiedEvent[];
  sendAfter: Date;
}

export function dedupeHash(dedupeKey: string): string {
  return createHash('sha256').update(dedupeKey).digest('hex').slice(0, 32);
}

/** The row, unless its dedupe key exists already (then nothing: it is the same notification). */
export async function insertDelivery(tx: Tx, row: DeliveryRow): Promise<NewDelivery | null> {
  const id = randomUUID();
  const inserted = await tx.$executeRaw`
    INSERT INTO "NotificationDelivery"
      ("id", "dedupeKey", "groupKey", "destinationId", "policyName", "trigger", "status", "events",
       "eventCount", "sendAfter", "createdAt", "updatedAt")
    VALUES (${id}, ${row.dedupeKey}, ${row.groupKey}, ${row.destinationId}, ${row.policyName},
      ${row.trigger}, ${row.status}, ${JSON.stringify(row.events)}::jsonb, ${row.events.length},
      ${row.sendAfter}, CURRENT_TIMESTAMP, CURRENT_TIMESTAMP)
    ON CONFLICT ("dedupeKey", "destinationId") DO NOTHING`;
  return inserted > 0
    ? { id, dedupeKey: row.dedupeKey, destinationId: row.destinationId, sendAfter: row.sendAfter }
    : null;
}

/**
 * A digest: the event joins the group's row that is still Collecting, or opens one that goes out at
 * the end of the window. The sender closes a row (Collecting → Pending) with a conditional update, so
 * an append that loses that race matches no row and opens the next digest instead.
 */
export async function appendOrOpenDigest(
  tx: Tx,
  d: {
    groupKey: string;
    destinationId: string;
    policyName: string;
    trigger: string;
    event: NotifiedEvent;
    firstEventId: bigint;
    sendAfter: Date;
  },
): Promise<NewDelivery | null> {
  const open = await tx.notificationDelivery.findFirst({
    where: { groupKey: d.groupKey, destinationId: d.destinationId, status: 'Collecting' },
    select: { id: true },
  });
  if (open) {
    const appended = await tx.$executeRaw`
      UPDATE "NotificationDelivery" SET
        "events" = CASE WHEN "eventCount" < ${MAX_EVENTS_PER_DELIVERY}
                        THEN "events" || ${JSON.stringify([d.event])}::jsonb ELSE "events" END,
        "eventCount" = "eventCount" + 1,
        -- A rollout's digest is about its latest event (a commit status reads success from the
        -- rollout completing, not pending from the step before it).
        "trigger" = ${d.trigger},
        "updatedAt" = CURRENT_TIMESTAMP
      WHERE "id" = ${open.id} AND "status" = 'Collecting'`;
    if (appended > 0) return null;
  }
  return insertDelivery(tx, {
    dedupeKey: `${d.groupKey}/audit-${d.firstEventId}`,
    groupKey: d.groupKey,
    destinationId: d.destinationId,
    policyName: d.policyName,
    trigger: d.trigger,
    status: 'Collecting',
    events: [d.event],
    sendAfter: d.sendAfter,
  });
}
