import { Processor } from '@nestjs/bullmq';
import type { QueuePayloads } from '@flotilla/contract';
import { HubMetrics } from '../metrics/hub-metrics.service.js';
import { QueueWorker } from '../queues/queue-worker.js';
import { RetentionService } from '../history/retention.service.js';

/** The repeatable retention job (JobQueues.scheduleRetention): one run per interval, fleet-wide. */
@Processor('retention')
export class RetentionProcessor extends QueueWorker<'retention'> {
  readonly queue = 'retention' as const;

  constructor(
    private readonly retention: RetentionService,
    protected readonly metrics: HubMetrics,
  ) {
    super();
  }

  protected async handle(_payload: QueuePayloads['retention']) {
    return this.retention.run();
  }
}
