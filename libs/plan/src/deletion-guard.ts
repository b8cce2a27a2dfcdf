/**
 * The deletion guard: the rule by which the hub holds a change that would delete too many targets
 * (or fleet objects) until a person confirms it. It lives here, not in the hub, so that
 * `flotilla plan` says before a merge exactly what the hub would do after it.
 */

/** The hub's default limit (DELETION_GUARD_PERCENT) when neither the appset nor the caller sets one. */
export const DEFAULT_DELETION_GUARD_PERCENT = 50;

/** What a change would do to a set of targets, for the guard to judge. */
export interface GuardInput {
  /** Targets now. */
  current: number;
  /** Targets the change deletes. */
  deleting: number;
  /** Targets after the change (what stays plus what it creates). */
  after: number;
  /**
   * The count shrinking is judged against: the most targets seen since a person last confirmed a
   * hold (then what they confirmed). Only a confirmation lowers it, so a fleet cannot be walked
   * down one allowed step at a time. Null (never recorded): the current count.
   */
  baseline: number | null;
}

/** What the guard says about one change: would it be held, and why. */
export interface GuardVerdict {
  wouldHold: boolean;
  /**
   * The larger of the share of the current targets the change deletes and the share of the
   * baseline that would be gone after it (0–100, one decimal).
   */
  deletePercent: number;
  /** The largest share that goes through without confirmation. */
  limit: number;
  /** The baseline the change was judged against. */
  baseline: number;
}

/**
 * Held when the change deletes targets and either more than `limit` % of the current ones would go,
 * or more than `limit` % of the baseline would be gone after it — and always when all of the current
 * ones would go (a Git host or API answering an empty list looks exactly like that). No targets
 * yet, or nothing deleted: nothing to lose.
 */
export function evaluateDeletionGuard(input: GuardInput, limit: number): GuardVerdict {
  const baseline = Math.max(input.baseline ?? input.current, input.current);
  if (input.current === 0 || input.deleting === 0)
    return { wouldHold: false, deletePercent: 0, limit, baseline };
  const stepShare = (input.deleting * 100) / input.current;
  const shrinkShare = baseline > input.after ? ((baseline - input.after) * 100) / baseline : 0;
  const share = Math.max(stepShare, shrinkShare);
  const deletePercent = Math.round(share * 10) / 10;
  return { wouldHold: input.deleting >= input.current || share > limit, deletePercent, limit, baseline };
}

/**
 * The baseline after a change went through: a confirmed one sets it to what the person confirmed;
 * otherwise it only rises (growth is never a loss to guard against later).
 */
export function nextGuardBaseline(verdict: GuardVerdict, after: number, confirmed: boolean): number {
  return confirmed ? after : Math.max(verdict.baseline, after);
}

/**
 * The appset's own limit: `spec.deletionGuard.maxDeletePercent` in Flotilla's form. Argo CD documents
 * have no such field, so they get the hub's default (DELETION_GUARD_PERCENT).
 */
export function deletionGuardLimit(document: unknown, hubDefault: number): number {
  const doc = asObject(document);
  if (doc?.['apiVersion'] === 'argoproj.io/v1alpha1') return hubDefault;
  const guard = asObject(asObject(doc?.['spec'])?.['deletionGuard']);
  const v = guard?.['maxDeletePercent'];
  // A stored value that is not a percentage (written before validation covered every path) must
  // not disable the guard: `share > "everything"` is always false.
  return isPercent(v) ? v : hubDefault;
}

function isPercent(v: unknown): v is number {
  return typeof v === 'number' && Number.isFinite(v) && v >= 0 && v <= 100;
}

function asObject(v: unknown): Record<string, unknown> | undefined {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
    ? (v as Record<string, unknown>)
    : undefined;
}
