import type { StoredCredential } from '../state/state-store.js';

/** Without a known issue time, rotate this long before expiry. */
const FALLBACK_LEAD_MS = 60 * 60 * 1000;

/**
 * When the agent should trade its credential for a new one: once a third of its lifetime is left
 * (so a hub that is away for a while still leaves time to retry); null for one that never expires.
 */
export function rotationDueAt(stored: StoredCredential): Date | null {
  if (!stored.expiresAt) return null;
  const expires = Date.parse(stored.expiresAt);
  if (Number.isNaN(expires)) return null;
  const issued = stored.issuedAt ? Date.parse(stored.issuedAt) : NaN;
  const lead = Number.isNaN(issued) || issued >= expires ? FALLBACK_LEAD_MS : (expires - issued) / 3;
  return new Date(expires - lead);
}

/** Due and still possible: an expired credential cannot rotate; the agent registers again instead. */
export function rotationDue(stored: StoredCredential, now: Date): boolean {
  const due = rotationDueAt(stored);
  return due !== null && now >= due && now.getTime() < Date.parse(stored.expiresAt ?? '');
}

/** A long-poll must end in time for the rotation: the wait, shortened to the due time. */
export function pollSecondsBeforeRotation(
  stored: StoredCredential | undefined,
  waitSeconds: number,
  now: Date,
): number {
  const due = stored ? rotationDueAt(stored) : null;
  if (!due) return waitSeconds;
  return Math.max(0, Math.min(waitSeconds, Math.ceil((due.getTime() - now.getTime()) / 1000)));
}
