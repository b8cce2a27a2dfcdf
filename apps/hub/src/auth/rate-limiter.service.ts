import { Inject, Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { Redis } from 'ioredis';
import { HUB_CONFIG, type HubConfig } from '../config/hub-config.js';
import { HubError } from '../common/hub-error.js';
import { redisOptions } from '../db/redis-options.js';

const WINDOW_MS = 60_000;

/**
 * Fixed one-minute windows counted in Redis, so every hub replica shares one count per caller.
 * If Redis does not answer the request goes through (logged): losing Redis must not lock people
 * and agents out of a hub whose state lives in PostgreSQL.
 */
@Injectable()
export class RateLimiter implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger(RateLimiter.name);
  private redis: Redis | null = null;

  constructor(@Inject(HUB_CONFIG) private readonly config: HubConfig) {}

  async onModuleInit(): Promise<void> {
    const { people, agent } = this.config.auth.rateLimitPerMinute;
    if (people <= 0 && agent <= 0) return;
    // Commands fail fast instead of queueing while Redis is away (see the fail-open note above).
    const redis = new Redis({
      ...redisOptions(this.config.redis.url),
      lazyConnect: true,
      maxRetriesPerRequest: 1,
      enableOfflineQueue: false,
    });
    redis.on('error', () => undefined); // each failed command is logged where it fails
    await redis.connect();
    this.redis = redis;
  }

  /**
   * Counts one request under `key`; throws 429 with Retry-After seconds once `perMinute` is used up.
   * `who` names the caller in the error (e.g. `agent of cluster "eu-1"`).
   */
  async take(key: string, perMinute: number, who: string, now = Date.now()): Promise<void> {
    if (perMinute <= 0 || !this.redis) return;
    const window = Math.floor(now / WINDOW_MS);
    const redisKey = `${this.config.redis.prefix}:ratelimit:${key}:${window}`;
    let count: number;
    try {
      // One command per request (an idle fleet polls all the time): the window's key gets its expiry
      // on its first count. A process dying between the two leaves one small key of a past window.
      count = await this.redis.incr(redisKey);
      if (count === 1) await this.redis.pexpire(redisKey, WINDOW_MS);
    } catch (e) {
      this.logger.warn(`rate limit not checked (Redis: ${(e as Error).message})`);
      return;
    }
    if (count > perMinute) {
      const retryAfter = Math.max(1, Math.ceil(((window + 1) * WINDOW_MS - now) / 1000));
      throw new HubError(
        429,
        'rate-limited',
        `${who} made more than ${perMinute} requests this minute; retry after ${retryAfter} s`,
        undefined,
        undefined,
        { 'Retry-After': String(retryAfter) },
      );
    }
  }

  async onApplicationShutdown(): Promise<void> {
    await this.redis?.quit().catch(() => undefined);
  }
}
