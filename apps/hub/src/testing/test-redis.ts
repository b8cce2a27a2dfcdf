import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';

export const DEFAULT_TEST_REDIS_URL = 'redis://127.0.0.1:6379';

export function testRedisUrl(): string {
  return process.env['TEST_REDIS_URL'] ?? DEFAULT_TEST_REDIS_URL;
}

/** A key prefix no other test run uses, so many runs can share one Redis. */
export function uniqueRedisPrefix(label = 'test'): string {
  return `flotilla-${label}-${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`;
}

/** Deletes every key under the prefix (BullMQ's and the wake-up channel's). */
export async function deleteRedisPrefix(prefix: string, url: string = testRedisUrl()): Promise<number> {
  const redis = new Redis(url, { maxRetriesPerRequest: 3 });
  let deleted = 0;
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 500);
      cursor = next;
      if (keys.length > 0) deleted += await redis.del(...keys);
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
  return deleted;
}
