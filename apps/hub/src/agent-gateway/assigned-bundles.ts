import type { AuditActor, SyncReport } from '@flotilla/contract';
import type { AuditEntry } from '../audit/audit.service.js';
import type { Prisma } from '../generated/prisma/client.js';

type Tx = Prisma.TransactionClient;

/** A sync report and the target (of the reporting cluster) it is about. */
export interface SyncOfTarget {
  report: SyncReport;
  target: { id: string; name: string };
}

/**
 * What the targets of a group's sync reports may name: for each target, what the hub assigns it
 * now (desired, released, pinned) and the (revision, digest) pairs it ran successfully before —
 * read once for every batch of the group, two statements however many batches share it. Keys carry
 * the target id, so reading targets of other clusters too changes no batch's answer.
 */
export interface KnownBundles {
  assigned: Set<string>;
  /** Grows as batches are judged: a batch may roll back to a run an earlier report (or batch) made. */
  ran: Set<string>;
}

export async function readKnownBundles(tx: Tx, syncs: SyncReport[]): Promise<KnownBundles> {
  const known: KnownBundles = { assigned: new Set(), ran: new Set() };
  if (syncs.length === 0) return known;
  const targetIds = [...new Set(syncs.map((s) => s.targetId))];
  const targets = await tx.target.findMany({
    where: { id: { in: targetIds } },
    select: {
      id: true,
      desiredRevision: true,
      bundleDigest: true,
      releasedRevision: true,
      releasedDigest: true,
      pin: { select: { revision: true, bundleDigest: true } },
    },
  });
  const runs = await tx.syncRun.findMany({
    where: {
      targetId: { in: targetIds },
      outcome: 'Succeeded',
      // A dry run applied nothing: it is no revision this target ran.
      dryRun: false,
      bundleDigest: { in: [...new Set(syncs.map((s) => s.bundleDigest))] },
    },
    select: { targetId: true, revision: true, bundleDigest: true },
    distinct: ['targetId', 'revision', 'bundleDigest'],
  });
  for (const t of targets) {
    known.assigned.add(key(t.id, t.desiredRevision, t.bundleDigest));
    known.assigned.add(key(t.id, t.releasedRevision, t.releasedDigest));
    if (t.pin) known.assigned.add(key(t.id, t.pin.revision, t.pin.bundleDigest));
  }
  for (const r of runs) known.ran.add(key(r.targetId, r.revision, r.bundleDigest));
  return known;
}

/**
 * Which sync reports name a bundle the hub gave their target. A sync report is believed, stored as
 * history and may pin (an automatic rollback), so a report naming another cluster's digest would
 * make the hub serve that cluster's manifests to the reporter: digests are visible to any viewer.
 * A report may name:
 * - any report: what the hub assigns the target now (desired, released, pinned);
 * - any report: a (revision, digest) this target ran successfully before;
 * - a rollback only the latter: the agent goes back to something it ran, never somewhere new.
 * Reports are judged in batch order, so a batch may roll back to a run it reports earlier.
 * Returns the ids of the refused reports and an `agent.access-denied` audit entry for each.
 */
export function refuseUnassignedBundles(
  known: KnownBundles,
  actor: AuditActor,
  syncs: SyncOfTarget[],
): { refused: Set<string>; audit: AuditEntry[] } {
  const refused = new Set<string>();
  const audit: AuditEntry[] = [];
  const { assigned, ran } = known;
  for (const { report: r, target } of syncs) {
    const k = key(target.id, r.revision, r.bundleDigest);
    const allowed = k !== '' && (r.trigger === 'rollback' ? ran.has(k) : ran.has(k) || assigned.has(k));
    if (allowed) {
      if (r.outcome === 'Succeeded') ran.add(k);
      continue;
    }
    refused.add(r.id);
    audit.push({
      actor,
      action: 'agent.access-denied',
      scope: `target:${target.name}`,
      details: {
        resource: 'report',
        reportId: r.id,
        type: r.type,
        reason:
          r.trigger === 'rollback'
            ? 'a rollback may only go to a revision and bundle this target ran'
            : 'the report names a revision and bundle the hub did not assign to this target',
        revision: r.revision,
        bundleDigest: r.bundleDigest,
      },
    });
  }
  return { refused, audit };
}

function key(targetId: string, revision: string | null, digest: string | null): string {
  // Nothing assigned is no assignment: it must never match a report naming an empty digest.
  if (!revision || !digest) return '';
  return `${targetId}\n${revision}\n${digest}`;
}
