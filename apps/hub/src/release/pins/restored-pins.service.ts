import { systemActor } from '@flotilla/contract';
import { Injectable } from '@nestjs/common';
import { Database } from '../../db/database.js';
import { AuditLog } from '../../audit/audit.service.js';
import { ClusterWakeups } from '../../wakeups/cluster-wakeups.service.js';

/**
 * Rollback by revert, its last step: a pin made by an automatic rollback (or one a revert was opened
 * for) is lifted once Git's revision renders the pinned bundle again — the revert was merged, so Git
 * holds what the pin held. The target is released at the pinned revision as it lifts, so its agent
 * sees no change; the new revision then reaches it through the appset's rollout like any other.
 */
@Injectable()
export class RestoredPins {
  constructor(
    private readonly db: Database,
    private readonly audit: AuditLog,
    private readonly wakeups: ClusterWakeups,
  ) {}

  /** Lifts the appset's pins that Git has caught up with; returns the targets' names. */
  async liftRestored(appSetId: string): Promise<string[]> {
    const pinned = await this.db.prisma.target.findMany({
      where: { appSetId, deletionId: null, pin: { isNot: null } },
      include: { pin: true },
    });
    const due = pinned.flatMap((t) =>
      t.pin &&
      t.bundleDigest === t.pin.bundleDigest &&
      t.desiredRevision !== t.pin.revision &&
      (t.pin.actor.startsWith('agent:') || t.pin.revertUrl !== null)
        ? [{ target: t, pin: t.pin }]
        : [],
    );
    if (due.length === 0) return [];
    const lifted = await this.db.prisma.$transaction(async (tx) => {
      const done = [];
      for (const { target, pin } of due) {
        // Claimed by a conditional delete: another replica's expansion, or a new pin meanwhile, wins.
        const claimed = await tx.targetPin.deleteMany({
          where: { targetId: target.id, createdAt: pin.createdAt },
        });
        if (claimed.count === 0) continue;
        await tx.target.update({
          where: { id: target.id },
          data: { releasedRevision: pin.revision, releasedDigest: pin.bundleDigest },
        });
        done.push({ target, pin });
      }
      await this.audit.recordMany(
        done.map(({ target, pin }) => ({
          actor: systemActor('pin-lifting'),
          action: 'pin.lifted',
          scope: `target:${target.name}`,
          details: {
            revision: pin.revision,
            bundleDigest: pin.bundleDigest,
            gitRevision: target.desiredRevision,
            pinnedBy: pin.actor,
            revert: pin.revertUrl,
            reason: `Git's revision ${target.desiredRevision.slice(0, 12)} renders the pinned bundle (of ${pin.revision.slice(0, 12)})`,
          },
        })),
        tx,
      );
      return done;
    });
    await this.wakeups.notify(lifted.map((l) => l.target.clusterId));
    return lifted.map((l) => l.target.name);
  }
}
