import { Processor } from '@nestjs/bullmq';
import type { QueuePayloads } from '@flotilla/contract';
import { HubMetrics } from '../metrics/hub-metrics.service.js';
import { QueueWorker } from '../queues/queue-worker.js';
import { AppSetExpander } from '../desired-state/appset-expander.service.js';

@Processor('appset-expand')
export class AppSetExpandProcessor extends QueueWorker<'appset-expand'> {
  readonly queue = 'appset-expand' as const;

  constructor(
    private readonly expander: AppSetExpander,
    protected readonly metrics: HubMetrics,
  ) {
    super();
  }

  protected handle(p: QueuePayloads['appset-expand']) {
    return this.expander.expand(p.appSetId);
  }
}
