import { Logger } from '@nestjs/common';
import { Processor } from '@nestjs/bullmq';
import type { QueuePayloads } from '@flotilla/contract';
import { HubMetrics } from '../metrics/hub-metrics.service.js';
import { QueueWorker } from '../queues/queue-worker.js';

/**
 * Progressive rollouts arrive with a later issue. Until then every target is released as soon as it
 * is expanded, and a rollout job (none is queued yet) only says so in the log.
 */
@Processor('rollout')
export class RolloutProcessor extends QueueWorker<'rollout'> {
  readonly queue = 'rollout' as const;
  private readonly logger = new Logger(RolloutProcessor.name);

  constructor(protected readonly metrics: HubMetrics) {
    super();
  }

  protected handle(p: QueuePayloads['rollout']): Promise<{ released: 'immediately' }> {
    this.logger.log(
      `rollout ${p.appSetId}@${p.revision}: waves are not implemented; targets were released on expansion`,
    );
    return Promise.resolve({ released: 'immediately' });
  }
}
