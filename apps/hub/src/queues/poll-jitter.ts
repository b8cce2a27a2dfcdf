import { createHash } from 'node:crypto';

/**
 * Where in each polling interval a repository is fetched: a stable point in [1, every) ms derived
 * from its id. BullMQ otherwise puts every scheduler at the phase of the moment it was created, so
 * repositories registered together (a bulk import, an appset naming twenty) would all be fetched in
 * the same instant, every interval. Stable, so re-upserting a scheduler does not move it.
 */
export function pollOffsetMs(repositoryId: string, everyMs: number): number {
  if (everyMs <= 1) return 1;
  const h = createHash('sha256').update(repositoryId).digest().readUInt32BE(0);
  return 1 + (h % (everyMs - 1));
}
