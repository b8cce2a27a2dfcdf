/**
 * Rollback by revert: which commits of a range changed what is rendered. Each commit is known only
 * by its fingerprint (what the appset or target renders there, as one comparable string); a commit
 * whose fingerprint differs from the one before it is a commit to revert. The same rule serves the
 * offline `flotilla revert` (fleet repository, rendered with the hub's code) and the hub (the
 * target's repository, rendered by its render stage).
 */
export interface RevertRange {
  /** The commits after the revision to restore, oldest first, up to and including the head. */
  commits: readonly string[];
  /** The fingerprint at the revision to restore. */
  wanted: string;
  /** The fingerprint at the head: equal to `wanted` means nothing is left to revert. */
  atHead: string;
  /** The fingerprint at one commit of the range (asked in order, at most once per commit). */
  fingerprintAt: (commit: string) => Promise<string>;
}

/** The commits whose fingerprint differs from their predecessor's, oldest first. */
export async function commitsToRevert(range: RevertRange): Promise<string[]> {
  // Already restored (a revert merged, or changes that cancel out): nothing to write.
  if (range.atHead === range.wanted) return [];
  const changed: string[] = [];
  let previous = range.wanted;
  for (const commit of range.commits) {
    const current = await range.fingerprintAt(commit);
    if (current !== previous) changed.push(commit);
    previous = current;
  }
  return changed;
}
