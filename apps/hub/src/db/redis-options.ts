import type { RedisOptions } from 'ioredis';

/** ioredis options from a redis:// URL; BullMQ wants options it can duplicate, not a URL. */
export function redisOptions(url: string): RedisOptions {
  const u = new URL(url);
  const db = u.pathname.length > 1 ? Number(u.pathname.slice(1)) : 0;
  return {
    host: u.hostname || '127.0.0.1',
    port: u.port ? Number(u.port) : 6379,
    ...(u.username ? { username: decodeURIComponent(u.username) } : {}),
    ...(u.password ? { password: decodeURIComponent(u.password) } : {}),
    db: Number.isInteger(db) ? db : 0,
    ...(u.protocol === 'rediss:' ? { tls: {} } : {}),
    // BullMQ workers block on Redis; it requires this to be null.
    maxRetriesPerRequest: null,
  };
}
