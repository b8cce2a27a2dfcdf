import { Inject, Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { Redis } from 'ioredis';
import { HUB_CONFIG, type HubConfig } from '../config/hub-config.js';
import { redisOptions } from '../db/redis-options.js';
import { HubMetrics } from '../metrics/hub-metrics.service.js';
import { Gauge } from 'prom-client';

type Waiter = () => void;

export interface WakeupListener {
  /** True when woken (now or since the last call), false when `ms` pass first or the hub is stopping. */
  next(ms: number): Promise<boolean>;
  close(): void;
}

/**
 * Wakes agents' long-polls when their desired set changes. Notifications go through Redis pub/sub,
 * so the replica that changed a target need not be the one holding the agent's request.
 */
@Injectable()
export class ClusterWakeups implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger(ClusterWakeups.name);
  private readonly channel: string;
  private readonly waiters = new Map<string, Set<Waiter>>();
  private publisher!: Redis;
  private subscriber!: Redis;
  private closed = false;
  /** Counts wake-ups received; `stamp()` reads it, `wokenAt` holds each cluster's last. */
  private seq = 0;
  private readonly wokenAt = new Map<string, number>();
  /** Set when wake-ups may have been missed (the subscriber reconnected): every cluster counts as woken. */
  private allWokenAt = 0;

  constructor(
    @Inject(HUB_CONFIG) private readonly config: HubConfig,
    metrics: HubMetrics,
  ) {
    // Measured here, where the long-polls are held; the metrics registry knows no feature.
    const openLongPolls = () => this.openLongPolls;
    new Gauge({
      name: 'flotilla_agent_long_polls',
      help: 'Agent long-polls (GET /api/agent/v1/assignments) this hub process holds open now',
      registers: [metrics.registry],
      collect() {
        this.set(openLongPolls());
      },
    });
    this.channel = `${config.redis.prefix}:wake:cluster`;
  }

  async onModuleInit(): Promise<void> {
    const opts = { ...redisOptions(this.config.redis.url), lazyConnect: true };
    this.publisher = new Redis(opts);
    this.subscriber = new Redis(opts);
    try {
      await Promise.all([this.publisher.connect(), this.subscriber.connect()]);
    } catch (e) {
      this.publisher.disconnect();
      this.subscriber.disconnect();
      throw new Error(`cannot connect to Redis at ${this.config.redis.url} (REDIS_URL): ${String(e)}`, {
        cause: e,
      });
    }
    this.subscriber.on('message', (_channel: string, clusterId: string) => {
      this.wokenAt.set(clusterId, ++this.seq);
      this.wakeLocal(clusterId);
    });
    await this.subscriber.subscribe(this.channel);
    // ioredis subscribes again after a reconnect; what was published meanwhile is lost: wake everyone.
    this.subscriber.on('ready', () => {
      this.allWokenAt = ++this.seq;
      for (const id of [...this.waiters.keys()]) this.wakeLocal(id);
    });
  }

  async onApplicationShutdown(): Promise<void> {
    this.closed = true;
    // Answer every pending long-poll now, so the HTTP server can close without waiting them out.
    for (const id of [...this.waiters.keys()]) this.wakeLocal(id);
    await Promise.allSettled([this.subscriber.quit(), this.publisher.quit()]);
  }

  /**
   * Wakes the long-polls of these clusters on every replica. One message per cluster (each replica's
   * subscriber picks its own), all sent in one pipeline: one round trip however many clusters a
   * release touches, instead of one awaited PUBLISH each.
   */
  async notify(clusterIds: Iterable<string>): Promise<void> {
    const ids = [...new Set(clusterIds)];
    if (ids.length === 0) return;
    const pipeline = this.publisher.pipeline();
    for (const id of ids) pipeline.publish(this.channel, id);
    try {
      const results = (await pipeline.exec()) ?? [];
      const failed = results.filter(([err]) => err !== null);
      if (failed.length > 0) {
        this.logger.warn(
          `${failed.length} of ${ids.length} wake-up(s) not published: ${String(failed[0]?.[0])}`,
        );
      }
    } catch (e) {
      // Agents still converge on their next poll; a lost wake-up only costs latency.
      this.logger.warn(`${ids.length} wake-up(s) not published: ${String(e)}`);
    }
  }

  /**
   * Starts listening for wake-ups of one cluster. Listen *before* reading the state you compare
   * against, so a change landing in between is not missed: wake-ups are latched until `next` sees them.
   */
  listen(clusterId: string): WakeupListener {
    let pending = false;
    let resolveNext: ((woken: boolean) => void) | null = null;
    let timer: NodeJS.Timeout | undefined;
    const set = this.waiters.get(clusterId) ?? new Set<Waiter>();
    this.waiters.set(clusterId, set);
    const waiter: Waiter = () => {
      if (resolveNext) {
        clearTimeout(timer);
        const r = resolveNext;
        resolveNext = null;
        r(!this.closed);
      } else {
        pending = true;
      }
    };
    set.add(waiter);
    return {
      next: (ms: number) => {
        if (this.closed) return Promise.resolve(false);
        if (pending) {
          pending = false;
          return Promise.resolve(true);
        }
        return new Promise<boolean>((resolve) => {
          resolveNext = resolve;
          timer = setTimeout(() => {
            resolveNext = null;
            resolve(false);
          }, ms);
        });
      },
      close: () => {
        clearTimeout(timer);
        resolveNext?.(false);
        resolveNext = null;
        set.delete(waiter);
        if (set.size === 0) this.waiters.delete(clusterId);
      },
    };
  }

  /** A point in the sequence of wake-ups received; take it before reading state to compare later. */
  stamp(): number {
    return this.seq;
  }

  /**
   * True when a wake-up for the cluster arrived after `stamp()` returned `stamp` — or may have been
   * missed (the subscriber reconnected, or is not connected now).
   */
  wokenSince(clusterId: string, stamp: number): boolean {
    if (this.subscriber.status !== 'ready') return true;
    return this.allWokenAt > stamp || (this.wokenAt.get(clusterId) ?? 0) > stamp;
  }

  /** The clusters with a long-poll held open on this replica now. */
  listeningClusterIds(): string[] {
    return [...this.waiters.keys()];
  }

  get stopping(): boolean {
    return this.closed;
  }

  /** Agent long-polls this process holds open now: one listener per `GET assignments` in progress. */
  get openLongPolls(): number {
    let n = 0;
    for (const set of this.waiters.values()) n += set.size;
    return n;
  }

  private wakeLocal(clusterId: string): void {
    for (const w of [...(this.waiters.get(clusterId) ?? [])]) w();
  }
}
