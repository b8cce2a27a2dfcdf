import { Injectable, type OnModuleInit } from '@nestjs/common';
import { QUEUE_NAMES } from '@flotilla/contract';
import { Gauge } from 'prom-client';
import { JobQueues } from './job-queues.service.js';
import { HubMetrics } from '../metrics/hub-metrics.service.js';

/** Queue depth by state, read from Redis at scrape time (shared by every hub on the same prefix). */
@Injectable()
export class QueueMetrics implements OnModuleInit {
  constructor(
    private readonly metrics: HubMetrics,
    private readonly queues: JobQueues,
  ) {}

  onModuleInit(): void {
    const queues = this.queues;
    new Gauge({
      name: 'flotilla_queue_jobs',
      help: 'Jobs in each BullMQ queue by state',
      labelNames: ['queue', 'state'],
      registers: [this.metrics.registry],
      async collect() {
        for (const name of QUEUE_NAMES) {
          const counts = await queues.queue(name).getJobCounts('waiting', 'active', 'delayed', 'failed');
          for (const [state, n] of Object.entries(counts)) this.set({ queue: name, state }, n);
        }
      },
    });
  }
}
