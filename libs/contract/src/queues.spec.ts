import { describe, expect, it } from 'vitest';
import { jobId, QUEUE_NAMES, JOB_OPTIONS } from './queues.js';

describe('queue registry', () => {
  it('gives equal work an equal job id, and never uses the colon BullMQ refuses', () => {
    const a = jobId('appset-expand', { appSetId: 'a1', inputsHash: 'h1' });
    expect(a).toBe(jobId('appset-expand', { appSetId: 'a1', inputsHash: 'h1' }));
    expect(a).not.toBe(jobId('appset-expand', { appSetId: 'a1', inputsHash: 'h2' }));
    for (const id of [
      a,
      jobId('fleet-reconcile', { fleetSourceId: 'f', commit: 'abc', inventoryHash: 'i' }),
      jobId('notify', { deliveryId: 'd1', dedupeHash: 'ab12', destinationId: 'dest-1' }),
    ]) {
      expect(id).not.toContain(':');
    }
  });

  it('has job options for every queue', () => {
    for (const q of QUEUE_NAMES) expect(JOB_OPTIONS[q].attempts).toBeGreaterThan(0);
  });
});
