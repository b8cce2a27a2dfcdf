import { afterAll, describe, expect, it } from 'vitest';
import { JobQueues, RETENTION_SCHEDULER_ID } from '../queues/job-queues.service.js';
import { startTestHub, type TestHub } from '../testing/test-hub.js';
import { uniqueRedisPrefix } from '../testing/test-redis.js';

// Two worker replicas on one Redis: retention must be one scheduler (one job per interval), not
// one per replica, and a replica starting later must not move the next run.
describe('retention schedule across replicas', () => {
  const hubs: TestHub[] = [];

  afterAll(async () => {
    for (const hub of hubs.reverse()) await hub.close();
  });

  it('holds one retention scheduler whatever the number of replicas, first due one interval after it was made', async () => {
    const env = { REDIS_PREFIX: uniqueRedisPrefix('retention'), RETENTION_INTERVAL_MINUTES: '30' };
    const before = Date.now();
    hubs.push(await startTestHub(env));
    const queue = hubs[0]!.app.get(JobQueues).queue('retention');
    const [first] = await queue.getJobSchedulers();
    hubs.push(await startTestHub(env));

    const schedulers = await queue.getJobSchedulers();
    expect(schedulers.map((s) => [s.key, s.every])).toEqual([[RETENTION_SCHEDULER_ID, 30 * 60_000]]);
    // Not run at start: due one interval later, and the second replica left that time alone.
    expect(first?.next).toBeGreaterThanOrEqual(before + 30 * 60_000);
    expect(schedulers[0]?.next).toBe(first?.next);
    expect(await queue.getJobCounts('waiting', 'active', 'completed')).toEqual({
      waiting: 0,
      active: 0,
      completed: 0,
    });
  });
});
