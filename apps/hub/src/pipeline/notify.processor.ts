import { Processor } from '@nestjs/bullmq';
import { Inject } from '@nestjs/common';
import type { QueuePayloads } from '@flotilla/contract';
import type { Job } from 'bullmq';
import { HUB_CONFIG, type HubConfig } from '../config/hub-config.js';
import { Database } from '../db/database.js';
import { HubMetrics } from '../metrics/hub-metrics.service.js';
import { QueueWorker } from '../queues/queue-worker.js';
import { sendMessage } from '../notifications/destinations/send-message.js';
import { buildMessage, type NotifiedEvent } from '../notifications/notification-message.js';
import { NotificationsService, specOf } from '../notifications/notifications.service.js';

/**
 * Sends one delivery row. The row's state is the truth: a job for a row already Sent or Failed does
 * nothing, so a job queued twice (a requeue after a crash) sends once. A failure is retried with
 * back-off (the queue's options); after the last attempt the row is Failed. Each destination has its
 * own job, so one that fails or never answers holds up no other. Within this process, jobs for one
 * destination run one after another in the order the queue hands them out (event order), so a
 * receiver is told "opened" before "closed"; across replicas each message carries its event's time.
 */
@Processor('notify', { concurrency: 8 })
export class NotifyProcessor extends QueueWorker<'notify'> {
  readonly queue = 'notify' as const;
  /** The tail of each destination's chain of jobs in this process. */
  private readonly lanes = new Map<string, Promise<unknown>>();

  constructor(
    protected readonly metrics: HubMetrics,
    private readonly db: Database,
    private readonly notifications: NotificationsService,
    @Inject(HUB_CONFIG) private readonly config: HubConfig,
  ) {
    super();
  }

  protected handle(p: QueuePayloads['notify'], job: Job<QueuePayloads['notify']>): Promise<string> {
    const previous = this.lanes.get(p.destinationId) ?? Promise.resolve();
    const run = previous.catch(() => undefined).then(() => this.deliver(p, job));
    const tail = run.catch(() => undefined);
    this.lanes.set(p.destinationId, tail);
    void tail.then(() => {
      if (this.lanes.get(p.destinationId) === tail) this.lanes.delete(p.destinationId);
    });
    return run;
  }

  private async deliver(p: QueuePayloads['notify'], job: Job<QueuePayloads['notify']>): Promise<string> {
    const prisma = this.db.prisma;
    // Close a digest: from here on, events of its group open the next one.
    await prisma.notificationDelivery.updateMany({
      where: { id: p.deliveryId, status: 'Collecting' },
      data: { status: 'Pending' },
    });
    const row = await prisma.notificationDelivery.findUnique({ where: { id: p.deliveryId } });
    if (!row || row.status !== 'Pending') return `delivery ${row?.status ?? 'gone'}`;
    const fail = async (error: string, final: boolean) => {
      await prisma.notificationDelivery.update({
        where: { id: row.id },
        data: { attempts: { increment: 1 }, lastError: error, ...(final && { status: 'Failed' }) },
      });
      if (final) this.metrics.notifications.inc({ type: destinationType, outcome: 'failed' });
    };
    const destinationRow = await prisma.notificationDestination.findUnique({
      where: { id: row.destinationId },
    });
    const destinationType = destinationRow?.type ?? 'unknown';
    if (!destinationRow) {
      await fail('the destination was deleted', true);
      return 'destination gone';
    }
    const policy = await prisma.notificationPolicy.findUnique({ where: { name: row.policyName } });
    const message = buildMessage(
      { ...row, events: row.events as unknown as NotifiedEvent[] },
      policy ? specOf(policy.spec).template : undefined,
    );
    const repoUrl = message.appSet
      ? ((
          await prisma.target.findFirst({
            where: { appSet: { name: message.appSet } },
            select: { repoUrl: true },
            orderBy: { name: 'asc' },
          })
        )?.repoUrl ?? null)
      : null;
    try {
      await sendMessage(this.notifications.open(destinationRow), message, {
        timeoutMs: this.config.notifications.timeoutSeconds * 1000,
        repoUrl,
      });
    } catch (e) {
      const final = job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
      await fail(e instanceof Error ? e.message : String(e), final);
      if (!final) this.metrics.notifications.inc({ type: destinationType, outcome: 'retried' });
      throw e;
    }
    await prisma.notificationDelivery.update({
      where: { id: row.id },
      data: { status: 'Sent', sentAt: new Date(), attempts: { increment: 1 }, lastError: null },
    });
    this.metrics.notifications.inc({ type: destinationType, outcome: 'sent' });
    return 'sent';
  }
}
