// The rows that say which commit each ref of a repository means (`RepositoryRef`), shared by every replica.
import { literalRepoRefs } from '@flotilla/generators';
import { Prisma } from '../../generated/prisma/client.js';
import type { GitMirrors } from '../git/git-mirror.js';

/** ref → commit in this replica's mirror, for the refs it knows (an unknown ref is left out). */
export function resolveInMirror(
  mirrors: GitMirrors,
  repositoryId: string,
  refs: string[],
): Map<string, string> {
  const resolved = new Map<string, string>();
  for (const ref of refs) {
    try {
      resolved.set(ref, mirrors.resolve(repositoryId, ref));
    } catch {
      // an unknown ref is reported by the expansion that asked for it
    }
  }
  return resolved;
}

/**
 * Stores what a fetch that asked the remote at `startedAt` resolved, row by row, never over a row a
 * fetch that asked later wrote (an expansion records the refs it needs while a poll may be running).
 * Writes only what moved: polls mostly find nothing new. Returns whether a row moved, and what is
 * stored for each of `resolved`'s refs afterwards.
 */
export async function storeResolvedRefs(
  tx: Prisma.TransactionClient,
  repositoryId: string,
  resolved: Map<string, string>,
  startedAt: Date,
): Promise<{ moved: boolean; stored: Map<string, string> }> {
  const rows = await tx.repositoryRef.findMany({
    where: { repositoryId, ref: { in: [...resolved.keys()] } },
  });
  const before = new Map(rows.map((r) => [r.ref, r]));
  const stored = new Map<string, string>();
  let moved = false;
  for (const [ref, sha] of resolved) {
    const row = before.get(ref);
    if (row && (row.sha === sha || row.resolvedAt > startedAt)) {
      stored.set(ref, row.sha);
      continue;
    }
    moved = true;
    stored.set(ref, sha);
    await tx.repositoryRef.upsert({
      where: { repositoryId_ref: { repositoryId, ref } },
      create: { repositoryId, ref, sha, resolvedAt: startedAt },
      update: { sha, resolvedAt: startedAt },
    });
  }
  return { moved, stored };
}

/**
 * Drops the rows of refs nothing tracks any more: no poll keeps them fresh, so a row left behind
 * would give the next appset asking for the ref the commit it had when it was last read. A ref
 * without a row is fetched and recorded by the expansion that asks for it. A row written by a fetch
 * that asked later than this one stays (an expansion may just have recorded it).
 */
export async function pruneUntrackedRefs(
  tx: Prisma.TransactionClient,
  repositoryId: string,
  tracked: string[],
  startedAt: Date,
): Promise<void> {
  await tx.repositoryRef.deleteMany({
    where: { repositoryId, ref: { notIn: tracked }, resolvedAt: { lte: startedAt } },
  });
}

/**
 * Refs anyone reads from the repository at `url`, which its polls keep fresh: appset literals,
 * targets' revisions, and HEAD.
 */
export async function trackedRefs(db: Prisma.TransactionClient, url: string): Promise<string[]> {
  const refs = new Set<string>(['HEAD']);
  const appsets = await db.applicationSet.findMany({
    where: { repoUrls: { has: url } },
    select: { spec: true },
  });
  for (const a of appsets) for (const r of literalRepoRefs(a.spec).get(url) ?? []) refs.add(r);
  const targets = await db.target.findMany({
    where: { repoUrl: url, sources: { equals: Prisma.DbNull } },
    select: { targetRevision: true },
    distinct: ['targetRevision'],
  });
  for (const t of targets) refs.add(t.targetRevision || 'HEAD');
  // A multi-source target records what each of its sources asks for (a templated repoURL is
  // known only there).
  const fromSources = await db.$queryRaw<{ ref: string }[]>`
    SELECT DISTINCT s->>'targetRevision' AS "ref"
    FROM "Target" t, jsonb_array_elements(t."sources") s
    WHERE t."sources" IS NOT NULL AND s->>'repoUrl' = ${url} AND s->>'chart' IS NULL`;
  for (const r of fromSources) refs.add(r.ref || 'HEAD');
  return [...refs].sort();
}
