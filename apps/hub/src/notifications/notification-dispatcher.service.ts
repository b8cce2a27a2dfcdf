import {
  Inject,
  Injectable,
  Logger,
  type OnApplicationBootstrap,
  type OnApplicationShutdown,
} from '@nestjs/common';
import { HUB_CONFIG, type HubConfig } from '../config/hub-config.js';
import { Database } from '../db/database.js';
import { JobQueues } from '../queues/job-queues.service.js';
import { unreadAuditEvents } from './audit-cursor.js';
import { dedupeHash, type NewDelivery } from './notification-deliveries.js';
import { fanOutToPolicies } from './notification-fan-out.js';
import { triggersOf, type AuditRecord } from './notification-triggers.js';

/** How often the audit log is read for new events; a notification is queued at most this late. */
export const DISPATCH_INTERVAL_MS = 1_000;
/** Audit events matched per transaction. */
const BATCH = 500;
/** Only one replica dispatches at a time: "ntfy" in ASCII. */
const DISPATCH_LOCK = 0x6e746679;
/** A queued delivery not sent this long after it was due is queued again (a crash lost its job). */
const REQUEUE_AFTER_MS = 30_000;

/**
 * Turns audit events into delivery rows. It reads each audit chain lane after that lane's cursor, in
 * id order — commit order within a lane, since its appenders hold the lane lock until commit; across
 * lanes a lower id may commit later, so one cursor for all would skip it — matches each event's triggers
 * against the policies, and in the same transaction writes the deliveries and moves the cursor: a
 * crash replays a batch whole or not at all, and the transaction-scoped advisory lock lets one
 * replica dispatch at a time. So each notification exists once however many hubs run. Sending is
 * the `notify` queue's (NotifyProcessor).
 */
@Injectable()
export class NotificationDispatcher implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(NotificationDispatcher.name);
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private lastRequeue = 0;

  constructor(
    private readonly db: Database,
    private readonly queues: JobQueues,
    @Inject(HUB_CONFIG) private readonly config: HubConfig,
  ) {}

  onApplicationBootstrap(): void {
    if (!this.config.roles.worker) return;
    this.timer = setInterval(() => {
      this.running ??= this.tick().finally(() => (this.running = undefined));
    }, DISPATCH_INTERVAL_MS);
  }

  async onApplicationShutdown(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }

  private async tick(): Promise<void> {
    try {
      // Bounded: at most 20 batches (10,000 events) per tick; the next tick carries on.
      for (let i = 0; i < 20; i++) if ((await this.dispatchOnce()) < BATCH) break;
      if (Date.now() - this.lastRequeue > REQUEUE_AFTER_MS) {
        this.lastRequeue = Date.now();
        await this.requeueStale();
      }
    } catch (e) {
      this.logger.warn(`notification dispatch failed (retried next tick): ${String(e)}`);
    }
  }

  /** One batch of audit events; returns how many it read (0 when another replica holds the lock). */
  async dispatchOnce(): Promise<number> {
    let read = 0;
    const created: NewDelivery[] = [];
    await this.db.prisma.$transaction(
      async (tx) => {
        const [lock] = await tx.$queryRaw<{ locked: boolean }[]>`
          SELECT pg_try_advisory_xact_lock(${DISPATCH_LOCK}::bigint) AS locked`;
        if (!lock?.locked) return;
        const rows = await unreadAuditEvents(tx, BATCH);
        read = rows.length;
        if (rows.length === 0) return;
        const events: AuditRecord[] = rows.map((r) => ({
          id: r.id,
          at: r.at,
          actor: r.actor,
          action: r.action,
          scope: r.scope,
          details: (r.details ?? {}) as Record<string, unknown>,
        }));
        const hits = events.map((e) => ({ event: e, hits: triggersOf(e) })).filter((x) => x.hits.length > 0);
        if (hits.length > 0) created.push(...(await fanOutToPolicies(tx, hits)));
      },
      { timeout: 60_000 },
    );
    for (const d of created) await this.enqueue(d);
    return read;
  }

  private async enqueue(d: NewDelivery): Promise<void> {
    await this.queues.enqueue(
      'notify',
      { deliveryId: d.id, dedupeHash: dedupeHash(d.dedupeKey), destinationId: d.destinationId },
      { delayMs: Math.max(0, d.sendAfter.getTime() - Date.now()) },
    );
  }

  /**
   * Deliveries whose job was lost (a hub killed between committing the row and queueing it, or Redis
   * lost) are queued again; a job still there keeps its id, so this adds nothing twice.
   */
  private async requeueStale(): Promise<void> {
    const stale = await this.db.prisma.notificationDelivery.findMany({
      where: {
        status: { in: ['Collecting', 'Pending'] },
        sendAfter: { lt: new Date(Date.now() - REQUEUE_AFTER_MS) },
      },
      select: { id: true, dedupeKey: true, destinationId: true, sendAfter: true },
      take: 1000,
    });
    for (const d of stale) await this.enqueue(d);
  }
}
