import { execFileSync } from 'node:child_process';
import { Redis } from 'ioredis';
import { freePort } from './free-port.js';
import type { ProcessSupervisor } from './process-supervisor.js';
import { waitFor } from './wait-for.js';

export async function redisAnswers(url: string): Promise<boolean> {
  const client = new Redis(url, {
    lazyConnect: true,
    connectTimeout: 1_000,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return (await client.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    client.disconnect();
  }
}

function hasRedisServer(): boolean {
  try {
    execFileSync('redis-server', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/**
 * Returns a Redis URL that answers: `preferred` when it does, else a private `redis-server` on a
 * free loopback port (no persistence), started under `supervisor` so it stops with everything else.
 */
export async function ensureRedis(
  preferred: string,
  supervisor: ProcessSupervisor,
): Promise<{ url: string; started: boolean }> {
  if (await redisAnswers(preferred)) return { url: preferred, started: false };
  if (!hasRedisServer()) {
    throw new Error(
      `Redis does not answer at ${preferred} and redis-server is not installed. ` +
        'Install it (Debian/Ubuntu: apt-get install redis-server; macOS: brew install redis) or set REDIS_URL.',
    );
  }
  const port = await freePort();
  supervisor.spawn('redis', 'redis-server', [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--save',
    '',
    '--appendonly',
    'no',
  ]);
  const url = `redis://127.0.0.1:${port}`;
  await waitFor('the private redis-server', async () => ((await redisAnswers(url)) ? true : undefined), {
    timeoutMs: 10_000,
  });
  return { url, started: true };
}

/** Deletes every key under a key prefix (a BullMQ prefix), so a run leaves a shared Redis as it found it. */
export async function deleteRedisKeys(url: string, prefix: string): Promise<void> {
  const redis = new Redis(url, { maxRetriesPerRequest: 1 });
  try {
    let cursor = '0';
    do {
      // The prefix is matched literally: a glob character in it must not widen the sweep.
      const literal = prefix.replace(/[*?[\]\\]/g, '\\$&');
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${literal}:*`, 'COUNT', 500);
      cursor = next;
      if (keys.length) await redis.unlink(...keys);
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
}
