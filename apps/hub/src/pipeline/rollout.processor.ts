import { Processor } from '@nestjs/bullmq';
import type { QueuePayloads } from '@flotilla/contract';
import { HubMetrics } from '../metrics/hub-metrics.service.js';
import { QueueWorker } from '../queues/queue-worker.js';
import { RolloutsService } from '../release/rollouts/rollouts.service.js';

/** One tick of a rollout: release, judge, bake, advance (see RolloutsService.tick). */
@Processor('rollout')
export class RolloutProcessor extends QueueWorker<'rollout'> {
  readonly queue = 'rollout' as const;

  constructor(
    protected readonly metrics: HubMetrics,
    private readonly rollouts: RolloutsService,
  ) {
    super();
  }

  protected handle(p: QueuePayloads['rollout']): Promise<{ status: string; message: string }> {
    return this.rollouts.tick(p);
  }
}
