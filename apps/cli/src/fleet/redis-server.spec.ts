import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { deleteRedisKeys } from './redis-server.js';

const REDIS_URL = process.env['TEST_REDIS_URL'] ?? 'redis://127.0.0.1:6379';

/** What the demo's stop does to a shared Redis: its own keys go, nobody else's. */
describe('deleteRedisKeys on a real Redis', () => {
  const redis = new Redis(REDIS_URL);
  const run = randomUUID().slice(0, 8);
  afterAll(async () => {
    const left = await redis.keys(`*${run}*`);
    if (left.length > 0) await redis.del(...left);
    redis.disconnect();
  });

  it('deletes every key under the prefix, matched literally, and leaves the rest', async () => {
    // `demo*-RUN` as a glob would also match `demoX-RUN`, another run's prefix.
    const mine = `demo*-${run}`;
    const theirs = `demoX-${run}`;
    const keys = [`${mine}:bull:q:1`, `${mine}:ratelimit:a`, `${theirs}:bull:q:1`, `${mine}x:other`];
    for (const k of keys) await redis.set(k, '1');
    for (let i = 0; i < 1_200; i++) await redis.set(`${mine}:many:${i}`, '1');

    await deleteRedisKeys(REDIS_URL, mine);

    expect((await redis.keys(`*${run}*`)).sort()).toEqual([`${mine}x:other`, `${theirs}:bull:q:1`].sort());
  });
});
