import { createHash, randomUUID } from 'node:crypto';
import {
  Inject,
  Injectable,
  Logger,
  type OnApplicationBootstrap,
  type OnApplicationShutdown,
} from '@nestjs/common';
import { parseGoDuration } from '@flotilla/windows';
import { HUB_CONFIG, type HubConfig } from '../config/hub-config.js';
import { Database } from '../db/database.js';
import { asRecord } from '../common/json.js';
import { JobQueues } from '../queues/job-queues.service.js';
import type { Prisma } from '../generated/prisma/client.js';
import { policyMatches, type EventContext } from './notification-match.js';
import type { NotifiedEvent } from './notification-message.js';
import { splitScope, triggersOf, type AuditRecord, type TriggerHit } from './notification-triggers.js';
import { specOf } from './notifications.service.js';
import { claimOnce } from './notification-once.js';

type Tx = Prisma.TransactionClient;

/** How often the audit log is read for new events; a notification is queued at most this late. */
export const DISPATCH_INTERVAL_MS = 1_000;
/** Audit events matched per transaction. */
const BATCH = 500;
/** Events a digest row keeps (it counts them all). */
const MAX_EVENTS_PER_DELIVERY = 50;
/** Only one replica dispatches at a time: "ntfy" in ASCII. */
const DISPATCH_LOCK = 0x6e746679;
/** A queued delivery not sent this long after it was due is queued again (a crash lost its job). */
const REQUEUE_AFTER_MS = 30_000;
/**
 * Per-target success at a revision the appset rolls out: the rollout's step messages tell it, one
 * per step and a summary, instead of one per cluster.
 */
const FOLDED_INTO_ROLLOUT = new Set(['sync-succeeded', 'deployed']);

interface NewDelivery {
  id: string;
  dedupeKey: string;
  destinationId: string;
  sendAfter: Date;
}

/**
 * Turns audit events into delivery rows. It reads the audit log after its cursor, in id order
 * (commit order, since appenders hold the chain lock until commit), matches each event's triggers
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
        const cursor = await tx.notificationCursor.findUnique({ where: { id: 'audit' } });
        const after = cursor?.lastAuditId ?? 0n;
        const rows = await tx.auditEvent.findMany({
          where: { id: { gt: after } },
          orderBy: { id: 'asc' },
          take: BATCH,
        });
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
        if (hits.length > 0) created.push(...(await this.match(tx, hits)));
        const last = rows[rows.length - 1]!.id;
        await tx.notificationCursor.upsert({
          where: { id: 'audit' },
          create: { id: 'audit', lastAuditId: last },
          update: { lastAuditId: last },
        });
      },
      { timeout: 60_000 },
    );
    for (const d of created) await this.enqueue(d);
    return read;
  }

  private async match(tx: Tx, batch: { event: AuditRecord; hits: TriggerHit[] }[]): Promise<NewDelivery[]> {
    const policies = (await tx.notificationPolicy.findMany()).map((p) => ({
      name: p.name,
      spec: specOf(p.spec),
      createdAt: p.createdAt,
    }));
    if (policies.length === 0) return [];
    const destinations = new Map(
      (await tx.notificationDestination.findMany({ select: { id: true, name: true } })).map((d) => [
        d.name,
        d.id,
      ]),
    );
    const contexts = await this.contexts(
      tx,
      batch.map((b) => b.event),
    );
    const now = new Date();
    const created: NewDelivery[] = [];
    for (const { event, hits } of batch) {
      const ctx = contexts.get(event.id)!;
      for (const hit of hits) {
        for (const policy of policies) {
          // A policy tells what happens from its creation on: events the dispatcher reaches only
          // now (it reads the log a moment behind) but that happened before it are not news to it.
          if (event.at < policy.createdAt) continue;
          if (!policyMatches(policy.spec, hit, ctx.context)) continue;
          if (hit.oncePer !== undefined && !(await claimOnce(tx, `policy:${policy.name}/${hit.oncePer}`)))
            continue;
          if (FOLDED_INTO_ROLLOUT.has(hit.trigger) && ctx.rolloutActive) continue;
          const notified = notifiedEvent(event, hit, ctx.context);
          for (const destinationName of policy.spec.destinations) {
            const destinationId = destinations.get(destinationName);
            // Deleting a destination in use is refused; one gone anyway is skipped, not fatal.
            if (!destinationId) continue;
            const windowMs = parseGoDuration(policy.spec.digestWindow);
            const digestKey = hit.perTarget
              ? `${policy.name}/${hit.trigger}/${ctx.context.appSet ?? event.scope}`
              : hit.rolloutProgress
                ? `${policy.name}/rollout/${event.scope}/${notified.revision ?? ''}`
                : null;
            const d = digestKey
              ? await appendOrOpenDigest(tx, {
                  groupKey: digestKey,
                  destinationId,
                  policyName: policy.name,
                  trigger: hit.trigger,
                  event: notified,
                  firstEventId: event.id,
                  sendAfter: new Date(now.getTime() + windowMs),
                })
              : await insertDelivery(tx, {
                  dedupeKey: `${policy.name}/${hit.trigger}/${hit.oncePer ?? `audit-${event.id}`}`,
                  groupKey: `${policy.name}/${hit.trigger}/single`,
                  destinationId,
                  policyName: policy.name,
                  trigger: hit.trigger,
                  status: 'Pending',
                  events: [notified],
                  sendAfter: now,
                });
            if (d) created.push(d);
          }
        }
      }
    }
    return created;
  }

  /** Appset, project, target and cluster of each event, read in a few queries for the batch. */
  private async contexts(
    tx: Tx,
    events: AuditRecord[],
  ): Promise<Map<bigint, { context: EventContext; rolloutActive: boolean }>> {
    const names = (kind: string) => [
      ...new Set(
        events
          .map((e) => splitScope(e.scope))
          .filter(([k]) => k === kind)
          .map(([, n]) => n),
      ),
    ];
    const targets = new Map(
      (
        await tx.target.findMany({
          where: { name: { in: names('target') } },
          select: {
            name: true,
            appSetId: true,
            appSet: { select: { name: true, project: true } },
            cluster: { select: { name: true, labels: true } },
          },
        })
      ).map((t) => [t.name, t]),
    );
    const appSets = new Map(
      (
        await tx.applicationSet.findMany({
          where: {
            name: { in: [...names('appset'), ...[...targets.values()].map((t) => t.appSet.name)] },
          },
          select: { id: true, name: true, project: true },
        })
      ).map((a) => [a.name, a]),
    );
    const clusters = new Map(
      (
        await tx.cluster.findMany({
          where: { name: { in: names('cluster') } },
          select: { name: true, labels: true },
        })
      ).map((c) => [c.name, c]),
    );
    // Whether a rollout released the event's target at the event's revision: that target's syncs of
    // it are told by the rollout's messages. Judged by what the rollout released, not by time: a
    // report's audit event may be written after the rollout it completed, and a lagging dispatcher
    // must fold alike; a cluster added after the rollout completed is released without it, and told.
    const revisionOf = (e: AuditRecord) =>
      typeof e.details['revision'] === 'string' ? e.details['revision'] : null;
    const revisions = [...new Set(events.map(revisionOf).filter((r): r is string => r !== null))];
    const rollouts =
      revisions.length === 0 || targets.size === 0
        ? []
        : await tx.rollout.findMany({
            where: {
              appSetId: { in: [...new Set([...targets.values()].map((t) => t.appSetId))] },
              revision: { in: revisions },
            },
            select: { appSetId: true, revision: true, progress: true },
          });
    const released = rollouts.map((r) => ({
      appSetId: r.appSetId,
      revision: r.revision,
      // progress.released: target name → when the rollout released it (rollout-plan.ts).
      targets: asRecord((r.progress as { released?: unknown } | null)?.released),
    }));
    const rolling = (appSetId: string, e: AuditRecord, target: string | null) =>
      target !== null &&
      released.some(
        (r) => r.appSetId === appSetId && r.revision === revisionOf(e) && r.targets[target] !== undefined,
      );
    const out = new Map<bigint, { context: EventContext; rolloutActive: boolean }>();
    for (const e of events) {
      const [kind, name] = splitScope(e.scope);
      const context: EventContext = {
        appSet: null,
        project: null,
        target: null,
        cluster: null,
        clusterLabels: null,
      };
      let appSetId: string | null = null;
      if (kind === 'target') {
        const t = targets.get(name);
        context.target = name;
        if (t) {
          Object.assign(context, {
            appSet: t.appSet.name,
            project: t.appSet.project,
            cluster: t.cluster.name,
            clusterLabels: asRecord(t.cluster.labels),
          });
          appSetId = t.appSetId;
        }
      } else if (kind === 'appset') {
        const a = appSets.get(name);
        context.appSet = name;
        context.project = a?.project ?? null;
        appSetId = a?.id ?? null;
      } else if (kind === 'cluster') {
        const c = clusters.get(name);
        context.cluster = name;
        context.clusterLabels = c ? asRecord(c.labels) : {};
      }
      out.set(e.id, { context, rolloutActive: appSetId !== null && rolling(appSetId, e, context.target) });
    }
    return out;
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

export function dedupeHash(dedupeKey: string): string {
  return createHash('sha256').update(dedupeKey).digest('hex').slice(0, 32);
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

/** The row, unless its dedupe key exists already (then nothing: it is the same notification). */
async function insertDelivery(tx: Tx, row: DeliveryRow): Promise<NewDelivery | null> {
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
async function appendOrOpenDigest(
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

function notifiedEvent(e: AuditRecord, hit: TriggerHit, ctx: EventContext): NotifiedEvent {
  const revision = e.details['revision'];
  return {
    at: e.at.toISOString(),
    action: e.action,
    actor: e.actor,
    scope: e.scope,
    target: ctx.target,
    cluster: ctx.cluster,
    appSet: ctx.appSet,
    project: ctx.project,
    revision: typeof revision === 'string' ? revision : null,
    message: hit.message,
    details: e.details,
  };
}
