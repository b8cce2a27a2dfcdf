// Writing what agents are given: a target's released revision and bundle become its desired ones.
import type { Prisma } from '../../generated/prisma/client.js';
import { policyDeniedBy, type TargetRow } from './rollout-records.js';

type Tx = Prisma.TransactionClient;

type Releasable = { id: string; desiredRevision: string; bundleDigest: string | null };

/**
 * Releases many targets with one UPDATE per distinct (revision, bundle): a commit to an appset of
 * 1,000 targets has as many distinct bundles as apps, so 1,000 round trips inside the transaction
 * (seconds on a busy database) become about ten.
 */
export async function releaseTargets(tx: Tx, targets: readonly Releasable[], now: Date): Promise<void> {
  const groups = new Map<string, { revision: string; digest: string | null; ids: string[] }>();
  for (const t of targets) {
    const key = JSON.stringify([t.desiredRevision, t.bundleDigest]);
    const group = groups.get(key) ?? { revision: t.desiredRevision, digest: t.bundleDigest, ids: [] };
    group.ids.push(t.id);
    groups.set(key, group);
  }
  for (const g of groups.values()) {
    await tx.target.updateMany({
      where: { id: { in: g.ids } },
      data: { releasedRevision: g.revision, releasedDigest: g.digest, releasedAt: now },
    });
  }
}

/**
 * Releases the targets a plan named, one by one in the plan's order (a name no longer among the
 * targets is skipped), and returns those released, whose clusters are to be woken after commit.
 */
export async function releaseNamed(
  tx: Tx,
  targets: readonly TargetRow[],
  names: readonly string[],
  now: Date,
): Promise<TargetRow[]> {
  const byName = new Map(targets.map((t) => [t.name, t]));
  const released: TargetRow[] = [];
  for (const name of names) {
    const t = byName.get(name);
    // A bundle the admission policies deny stays unreleased whatever step the rollout is at.
    if (!t || policyDeniedBy(t) !== null) continue;
    await releaseTarget(tx, t, now);
    released.push(t);
  }
  return released;
}

async function releaseTarget(tx: Tx, t: Releasable, now: Date): Promise<void> {
  await tx.target.update({
    where: { id: t.id },
    data: { releasedRevision: t.desiredRevision, releasedDigest: t.bundleDigest, releasedAt: now },
  });
}
