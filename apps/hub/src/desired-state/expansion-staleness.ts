// Whether what an expansion was computed from moved before its result is written: such a result is dropped.
import type { Prisma } from '../generated/prisma/client.js';
import { capabilitiesKey } from './cluster-capabilities.js';
import type { ResolvedRef } from './expansion-git-reads.js';

/** An expansion whose inputs moved before it was written: nothing was written. */
export const STALE = Symbol('stale expansion');
export type Stale = typeof STALE;

/** Whether any ref the expansion resolved is now stored at another commit. */
export async function refsMoved(tx: Prisma.TransactionClient, refs: ResolvedRef[]): Promise<boolean> {
  if (refs.length === 0) return false;
  const stored = await tx.repositoryRef.findMany({
    where: { repositoryId: { in: [...new Set(refs.map((r) => r.repositoryId))] } },
    select: { repositoryId: true, ref: true, sha: true },
  });
  const now = new Map(stored.map((r) => [`${r.repositoryId}\0${r.ref}`, r.sha]));
  return refs.some((r) => {
    const sha = now.get(`${r.repositoryId}\0${r.ref.trim() === '' ? 'HEAD' : r.ref.trim()}`);
    return sha !== undefined && sha !== r.sha;
  });
}

/**
 * Whether a cluster whose charts the expansion rendered has reported other capabilities since: its
 * agent's report asks for an expansion, but one already computing would otherwise write renders for
 * the old ones.
 */
export async function capabilitiesMoved(
  tx: Prisma.TransactionClient,
  used: Map<string, string>,
): Promise<boolean> {
  if (used.size === 0) return false;
  const now = await tx.cluster.findMany({
    where: { id: { in: [...used.keys()] } },
    select: { id: true, kubeVersion: true, apiVersions: true },
  });
  return now.some((c) => used.get(c.id) !== capabilitiesKey(c));
}
