// Matches a batch of audit events' triggers against the notification policies and writes a delivery per policy destination.
import type { NotificationPolicySpec } from '@flotilla/fleet-config';
import { parseGoDuration } from '@flotilla/windows';
import type { Prisma } from '../generated/prisma/client.js';
import { appendOrOpenDigest, insertDelivery, type NewDelivery } from './notification-deliveries.js';
import { readEventSubjects } from './notification-event-subjects.js';
import { policyMatches, type EventContext } from './notification-match.js';
import type { NotifiedEvent } from './notification-message.js';
import { claimOnce } from './notification-once.js';
import type { AuditRecord, TriggerHit } from './notification-triggers.js';
import { specOf } from './notifications.service.js';

type Tx = Prisma.TransactionClient;

/**
 * Per-target success at a revision the appset rolls out: the rollout's step messages tell it, one
 * per step and a summary, instead of one per cluster.
 */
const FOLDED_INTO_ROLLOUT = new Set(['sync-succeeded', 'deployed']);

interface Policy {
  name: string;
  spec: NotificationPolicySpec;
  createdAt: Date;
}

/** The deliveries the batch's trigger hits call for, written in `tx`; the ones new to it are returned. */
export async function fanOutToPolicies(
  tx: Tx,
  batch: { event: AuditRecord; hits: TriggerHit[] }[],
): Promise<NewDelivery[]> {
  const policies: Policy[] = (await tx.notificationPolicy.findMany()).map((p) => ({
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
  const subjects = await readEventSubjects(
    tx,
    batch.map((b) => b.event),
  );
  const now = new Date();
  const created: NewDelivery[] = [];
  for (const { event, hits } of batch) {
    const subject = subjects.get(event.id)!;
    for (const hit of hits) {
      for (const policy of policies) {
        // A policy tells what happens from its creation on: events the dispatcher reaches only
        // now (it reads the log a moment behind) but that happened before it are not news to it.
        if (event.at < policy.createdAt) continue;
        if (!policyMatches(policy.spec, hit, subject.context)) continue;
        if (hit.oncePer !== undefined && !(await claimOnce(tx, `policy:${policy.name}/${hit.oncePer}`)))
          continue;
        if (FOLDED_INTO_ROLLOUT.has(hit.trigger) && subject.rolloutActive) continue;
        const notified = notifiedEvent(event, hit, subject.context);
        for (const destinationName of policy.spec.destinations) {
          const destinationId = destinations.get(destinationName);
          // Deleting a destination in use is refused; one gone anyway is skipped, not fatal.
          if (!destinationId) continue;
          const d = await writeDelivery(tx, { event, hit, policy, notified, destinationId, now });
          if (d) created.push(d);
        }
      }
    }
  }
  return created;
}

/**
 * One policy's delivery of one hit to one destination: a digest row when the hit is per target or
 * rollout progress (grouped by appset, or by rollout revision), else a single notification.
 */
async function writeDelivery(
  tx: Tx,
  w: {
    event: AuditRecord;
    hit: TriggerHit;
    policy: Policy;
    notified: NotifiedEvent;
    destinationId: string;
    now: Date;
  },
): Promise<NewDelivery | null> {
  const { event, hit, policy, notified, destinationId, now } = w;
  const windowMs = parseGoDuration(policy.spec.digestWindow);
  const digestKey = hit.perTarget
    ? `${policy.name}/${hit.trigger}/${notified.appSet ?? event.scope}`
    : hit.rolloutProgress
      ? `${policy.name}/rollout/${event.scope}/${notified.revision ?? ''}`
      : null;
  return digestKey
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
