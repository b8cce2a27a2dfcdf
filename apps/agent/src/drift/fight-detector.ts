/**
 * Notices when self-heal is in a tug of war: the same fields of the same object drift back again
 * and again, written by the same other field manager (an HPA, an operator, a person's script).
 * Healing forever would just burn API calls and hide the conflict, so after `threshold` rounds the
 * object is declared contested and left to people.
 */
export class FightDetector {
  private readonly rounds = new Map<
    string,
    { signature: string; manager: string; count: number; at: number }
  >();

  /**
   * @param threshold identical rounds that make a fight
   * @param windowMs rounds further apart than this are unrelated (a person fixing something once a day)
   */
  constructor(
    private readonly threshold = 3,
    private readonly windowMs = 10 * 60_000,
  ) {}

  /**
   * Records a drift about to be healed; true when it is the `threshold`-th identical round in a row.
   * A drift no field manager can be blamed for (a deletion, a writer that leaves no managedFields)
   * counts as its own unknown writer: healing it forever is as much a tug of war.
   */
  record(objectKey: string, paths: readonly string[], blamed: string | undefined, at: number): boolean {
    const manager = blamed ?? '';
    const signature = [...paths].sort().join('\n');
    const prev = this.rounds.get(objectKey);
    const same =
      prev && prev.signature === signature && prev.manager === manager && at - prev.at <= this.windowMs;
    const count = same ? prev.count + 1 : 1;
    this.rounds.set(objectKey, { signature, manager, count, at });
    return count >= this.threshold;
  }

  /** The object has a new desired state: start counting afresh. */
  forget(objectKey: string): void {
    this.rounds.delete(objectKey);
  }

  clear(): void {
    this.rounds.clear();
  }
}

/**
 * The break-glass overrides `before` carried that `after` no longer does (closed or expired). Drift
 * healed right after one ends is the incident's manual changes being undone once, not a tug of war,
 * so the caller forgets the rounds it counted before and during the override.
 */
export function endedBreakGlass(
  before: readonly { id: string }[],
  after: readonly { id: string }[],
): string[] {
  const still = new Set(after.map((b) => b.id));
  return before.filter((b) => !still.has(b.id)).map((b) => b.id);
}
