// The ETag of a cluster's assignments, and whether a request's If-None-Match names it.
import { createHash } from 'node:crypto';

/** A strong ETag of the JSON of `value` (what an agent's long-poll compares). */
export function etagOf(value: unknown): string {
  return `"${createHash('sha256').update(JSON.stringify(value)).digest('hex').slice(0, 32)}"`;
}

/** ETag comparison as HTTP does it: a list, weak or strong, or `*`. */
export function etagMatches(ifNoneMatch: string | undefined, etag: string): boolean {
  if (!ifNoneMatch) return false;
  const bare = etag.replace(/^W\//, '');
  return ifNoneMatch
    .split(',')
    .map((s) => s.trim().replace(/^W\//, ''))
    .some((s) => s === '*' || s === bare);
}
