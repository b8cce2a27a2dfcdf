import { WorkerHost } from '@nestjs/bullmq';
import type { QueueName, QueuePayloads } from '@flotilla/contract';
import type { Job } from 'bullmq';
import type { HubMetrics } from '../metrics/hub-metrics.service.js';

/** Base of every queue handler: typed payloads and a metric per finished job. */
export abstract class QueueWorker<Q extends QueueName> extends WorkerHost {
  abstract readonly queue: Q;
  protected abstract readonly metrics: HubMetrics;

  protected abstract handle(payload: QueuePayloads[Q], job: Job<QueuePayloads[Q]>): Promise<unknown>;

  async process(job: Job<QueuePayloads[Q]>): Promise<unknown> {
    try {
      const result = await this.handle(job.data, job);
      this.metrics.jobs.inc({ queue: this.queue, outcome: 'completed' });
      return result;
    } catch (e) {
      this.metrics.jobs.inc({ queue: this.queue, outcome: 'failed' });
      throw e;
    }
  }
}
