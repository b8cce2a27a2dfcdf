// Bundle bodies by digest, kept in memory: a bundle is content-addressed, so its bytes never change.

/** What the cache holds at most, in UTF-16 code units of JSON (about bytes for manifests). */
export const BUNDLE_CACHE_MAX_CHARS = 64 * 1024 * 1024;

/**
 * The JSON of each bundle as `POST bundles/batch` splices it into its answer, by digest. A commit
 * gives a thousand clusters the same few bundles: each is read from PostgreSQL (and printed as text
 * by it) once, not once per cluster. Bounded by size; the least recently served goes first. Safe to
 * keep without invalidation: the digest is the hash of the content, and who may read a bundle is
 * decided per request, before the cache is consulted.
 */
export class BundleBodyCache {
  private readonly bodies = new Map<string, string>();
  private size = 0;

  constructor(private readonly maxChars = BUNDLE_CACHE_MAX_CHARS) {}

  get(digest: string): string | undefined {
    const body = this.bodies.get(digest);
    if (body !== undefined) {
      // Map order is insertion order: moving it to the end makes the first entry the least recent.
      this.bodies.delete(digest);
      this.bodies.set(digest, body);
    }
    return body;
  }

  set(digest: string, body: string): void {
    if (body.length > this.maxChars || this.bodies.has(digest)) return;
    this.bodies.set(digest, body);
    this.size += body.length;
    for (const [oldest, old] of this.bodies) {
      if (this.size <= this.maxChars) break;
      this.bodies.delete(oldest);
      this.size -= old.length;
    }
  }

  /** Bundles held now. */
  get count(): number {
    return this.bodies.size;
  }
}
