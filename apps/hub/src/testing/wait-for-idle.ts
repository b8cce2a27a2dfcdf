import type { INestApplication } from '@nestjs/common';
import { QUEUE_NAMES } from '@flotilla/contract';
import { JobQueues } from '../queues/job-queues.service.js';

/**
 * Resolves once no job is waiting or running in any hub queue (repeatable polls sit in "delayed"
 * between runs and are not counted), seen twice in a row so a job that enqueues another is covered.
 */
export async function waitForIdleQueues(app: INestApplication, timeoutMs = 60_000): Promise<void> {
  const queues = app.get(JobQueues);
  const deadline = Date.now() + timeoutMs;
  let idleInARow = 0;
  while (idleInARow < 2) {
    let busy = 0;
    for (const name of QUEUE_NAMES) {
      const c = await queues.queue(name).getJobCounts('waiting', 'active', 'prioritized');
      busy += (c['waiting'] ?? 0) + (c['active'] ?? 0) + (c['prioritized'] ?? 0);
    }
    idleInARow = busy === 0 ? idleInARow + 1 : 0;
    if (Date.now() > deadline) throw new Error(`hub queues still busy after ${timeoutMs} ms (${busy} jobs)`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
