// When the hub last heard from each cluster's agent, written in batches rather than once per request.
import { type BeforeApplicationShutdown, Injectable, Logger } from '@nestjs/common';
import { Database } from '../db/database.js';
import { ClusterWakeups } from '../wakeups/cluster-wakeups.service.js';

/**
 * `Cluster.lastSeenAt` is written at most this often per cluster: a request finding it older marks
 * the cluster seen, and every this-many seconds one UPDATE marks every cluster holding a long-poll on
 * this replica. So "last seen" is the last time the hub heard from the agent, within about this long.
 */
export const LAST_SEEN_EVERY_MS = 15_000;
/** Clusters marked seen are written together, one UPDATE at most this long after the request. */
const LAST_SEEN_FLUSH_MS = 1_000;

@Injectable()
export class ClusterLastSeen implements BeforeApplicationShutdown {
  private readonly logger = new Logger(ClusterLastSeen.name);
  /** Clusters seen since the last write of lastSeenAt, with when. */
  private readonly seen = new Map<string, number>();
  private flushTimer: NodeJS.Timeout | undefined;
  private refreshTimer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> = Promise.resolve();

  constructor(
    private readonly db: Database,
    private readonly wakeups: ClusterWakeups,
  ) {}

  /**
   * Marks the cluster seen. Written only when its stored lastSeenAt is older than LAST_SEEN_EVERY_MS,
   * and then together with the other clusters seen meanwhile (one UPDATE per flush, not one per request).
   */
  touch(cluster: { id: string; lastSeenAt: Date | null }, now = Date.now()): void {
    this.refreshTimer ??= setInterval(() => this.markListening(), LAST_SEEN_EVERY_MS).unref();
    const last = cluster.lastSeenAt?.getTime();
    if (last !== undefined && now - last < LAST_SEEN_EVERY_MS) return;
    this.seen.set(cluster.id, Math.max(now, this.seen.get(cluster.id) ?? 0));
    this.flushTimer ??= setTimeout(() => void this.flushSeen(), LAST_SEEN_FLUSH_MS).unref();
  }

  async beforeApplicationShutdown(): Promise<void> {
    clearInterval(this.refreshTimer);
    await this.flushSeen();
  }

  /** An agent holding a long-poll here is connected: it counts as seen now. */
  private markListening(): void {
    const now = Date.now();
    for (const id of this.wakeups.listeningClusterIds()) this.seen.set(id, now);
    void this.flushSeen();
  }

  private flushSeen(): Promise<void> {
    clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    // One flush at a time, in order: a later one never writes an older time over a newer one.
    this.flushing = this.flushing.then(async () => {
      if (this.seen.size === 0) return;
      const ids = [...this.seen.keys()];
      const at = [...this.seen.values()].map((ms) => new Date(ms).toISOString());
      this.seen.clear();
      try {
        await this.db.sql.query(
          `UPDATE "Cluster" c SET "lastSeenAt" = v.at
             FROM unnest($1::text[], $2::timestamp(3)[]) AS v(id, at)
            WHERE c.id = v.id AND (c."lastSeenAt" IS NULL OR c."lastSeenAt" < v.at)`,
          [ids, at],
        );
      } catch (e) {
        // Only "last seen" is late; the next request or refresh writes it again.
        this.logger.warn(`lastSeenAt of ${ids.length} cluster(s) not written: ${String(e)}`);
      }
    });
    return this.flushing;
  }
}
