import { Inject, Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { Redis } from 'ioredis';
import { HUB_CONFIG, type HubConfig } from '../config/hub-config.js';
import { redisOptions } from './redis-options.js';

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

  constructor(@Inject(HUB_CONFIG) private readonly config: HubConfig) {
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
    this.subscriber.on('message', (_channel: string, clusterId: string) => this.wakeLocal(clusterId));
    await this.subscriber.subscribe(this.channel);
  }

  async onApplicationShutdown(): Promise<void> {
    this.closed = true;
    // Answer every pending long-poll now, so the HTTP server can close without waiting them out.
    for (const id of [...this.waiters.keys()]) this.wakeLocal(id);
    await Promise.allSettled([this.subscriber.quit(), this.publisher.quit()]);
  }

  async notify(clusterIds: Iterable<string>): Promise<void> {
    for (const id of new Set(clusterIds)) {
      try {
        await this.publisher.publish(this.channel, id);
      } catch (e) {
        // Agents still converge on their next poll; a lost wake-up only costs latency.
        this.logger.warn(`wake-up for cluster ${id} not published: ${String(e)}`);
      }
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

  get stopping(): boolean {
    return this.closed;
  }

  private wakeLocal(clusterId: string): void {
    for (const w of [...(this.waiters.get(clusterId) ?? [])]) w();
  }
}
