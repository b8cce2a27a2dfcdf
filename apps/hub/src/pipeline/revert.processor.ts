import { Processor } from '@nestjs/bullmq';
import type { QueuePayloads } from '@flotilla/contract';
import { HubMetrics } from '../metrics/hub-metrics.service.js';
import { QueueWorker } from '../queues/queue-worker.js';
import { RevertsService } from '../release/reverts/reverts.service.js';

/** After an automatic rollback: open the revert pull request for the pinned target (release/reverts). */
@Processor('revert')
export class RevertProcessor extends QueueWorker<'revert'> {
  readonly queue = 'revert' as const;

  constructor(
    private readonly reverts: RevertsService,
    protected readonly metrics: HubMetrics,
  ) {
    super();
  }

  protected async handle(payload: QueuePayloads['revert']) {
    return this.reverts.afterRollback(payload);
  }
}
