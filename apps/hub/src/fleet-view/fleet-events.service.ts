import { Inject, Injectable, Logger, type OnModuleDestroy } from '@nestjs/common';
import type { FleetEventView } from '@flotilla/contract';
import { HUB_CONFIG, type HubConfig } from '../config/hub-config.js';
import { Database } from '../db/database.js';

type Listener = (event: FleetEventView) => void;

const POLL_MS = 1000;
/** Rows committed late (a long transaction) carry an older updatedAt: look back this far each time. */
const OVERLAP_MS = 5000;

/**
 * What changed in the fleet, for the console's live view: targets whose row changed (sync, health,
 * revision, report) and clusters whose agent went offline or came back. Read from PostgreSQL, not
 * from this replica's memory, so a browser on any replica sees every change whichever replica took
 * the report. Polls only while someone listens.
 */
@Injectable()
export class FleetEvents implements OnModuleDestroy {
  private readonly logger = new Logger(FleetEvents.name);
  private readonly listeners = new Set<Listener>();
  private timer: NodeJS.Timeout | null = null;
  private since = new Date();
  /** Target id → the updatedAt already announced, so the overlap window announces nothing twice. */
  private announced = new Map<string, number>();
  /** The same for appset and rollout rows (`appset:<id>`, `rollout:<id>`). */
  private announcedAppSets = new Map<string, number>();
  private online = new Map<string, boolean>();
  /** What the windows and break-glass looked like at the last poll (see policyFingerprint). */
  private policies: string | null = null;
  private polling = false;

  constructor(
    private readonly db: Database,
    @Inject(HUB_CONFIG) private readonly config: HubConfig,
  ) {}

  /** Calls `listener` with each change until the returned function is called. */
  subscribe(listener: Listener): () => void {
    this.listeners.add(listener);
    if (!this.timer) {
      this.since = new Date();
      this.announced.clear();
      this.announcedAppSets.clear();
      this.online.clear();
      this.policies = null;
      this.timer = setInterval(() => void this.poll(), POLL_MS);
      this.timer.unref();
    }
    return () => {
      this.listeners.delete(listener);
      if (this.listeners.size === 0) this.stop();
    };
  }

  onModuleDestroy(): void {
    this.listeners.clear();
    this.stop();
  }

  private stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  private async poll(): Promise<void> {
    if (this.polling) return; // a slow database: skip a tick rather than pile up queries
    this.polling = true;
    try {
      const now = new Date();
      const from = new Date(this.since.getTime() - OVERLAP_MS);
      const [changed, clusters, policies, appSetRows, rolloutRows] = await Promise.all([
        this.db.prisma.target.findMany({
          where: { updatedAt: { gte: from } },
          select: { id: true, name: true, updatedAt: true },
          take: 5000,
        }),
        this.db.prisma.cluster.findMany({ select: { name: true, lastSeenAt: true } }),
        this.policyFingerprint(),
        this.db.prisma.applicationSet.findMany({
          where: { updatedAt: { gte: from } },
          select: { id: true, name: true, updatedAt: true },
        }),
        this.db.prisma.rollout.findMany({
          where: { updatedAt: { gte: from } },
          select: { id: true, updatedAt: true, appSet: { select: { name: true } } },
        }),
      ]);
      const appSets = new Set<string>();
      for (const [key, name, at] of [
        ...appSetRows.map((a) => [`appset:${a.id}`, a.name, a.updatedAt.getTime()] as const),
        ...rolloutRows.map((r) => [`rollout:${r.id}`, r.appSet.name, r.updatedAt.getTime()] as const),
      ]) {
        if ((this.announcedAppSets.get(key) ?? -1) >= at) continue;
        this.announcedAppSets.set(key, at);
        appSets.add(name);
      }
      for (const [key, at] of this.announcedAppSets)
        if (at < from.getTime()) this.announcedAppSets.delete(key);
      const policiesChanged = this.policies !== null && this.policies !== policies;
      this.policies = policies;
      const targets: string[] = [];
      for (const t of changed) {
        const at = t.updatedAt.getTime();
        if ((this.announced.get(t.id) ?? -1) >= at) continue;
        this.announced.set(t.id, at);
        targets.push(t.name);
      }
      for (const [id, at] of this.announced) if (at < from.getTime()) this.announced.delete(id);
      const offlineBefore = now.getTime() - this.config.rollouts.offlineAfterSeconds * 1000;
      const flipped: string[] = [];
      for (const c of clusters) {
        const online = c.lastSeenAt !== null && c.lastSeenAt.getTime() >= offlineBefore;
        const before = this.online.get(c.name);
        if (before !== undefined && before !== online) flipped.push(c.name);
        this.online.set(c.name, online);
      }
      this.since = now;
      if (targets.length === 0 && flipped.length === 0 && !policiesChanged && appSets.size === 0) return;
      const event: FleetEventView = {
        targets,
        clusters: flipped,
        policies: policiesChanged,
        appSets: [...appSets].sort(),
        at: now.toISOString(),
      };
      for (const l of this.listeners) l(event);
    } catch (e) {
      this.logger.warn(`fleet change poll failed (retrying): ${e instanceof Error ? e.message : String(e)}`);
    } finally {
      this.polling = false;
    }
  }

  /**
   * Windows and break-glass change reasons without touching a target row. Two aggregates are
   * enough to notice any create, edit, delete (windows are soft-deleted, so updatedAt moves), open
   * or close, without reading the rows themselves.
   */
  private async policyFingerprint(): Promise<string> {
    const [windows, breakGlass] = await Promise.all([
      this.db.prisma.syncWindow.aggregate({ _max: { updatedAt: true }, _count: { _all: true } }),
      this.db.prisma.breakGlass.aggregate({
        _max: { openedAt: true, closedAt: true },
        _count: { _all: true },
      }),
    ]);
    return JSON.stringify([
      windows._max.updatedAt,
      windows._count._all,
      breakGlass._max,
      breakGlass._count._all,
    ]);
  }
}
