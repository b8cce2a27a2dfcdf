import { Processor } from '@nestjs/bullmq';
import type { QueuePayloads } from '@flotilla/contract';
import { HubMetrics } from '../metrics/hub-metrics.service.js';
import { QueueWorker } from '../queues/queue-worker.js';
import { FleetRepoService } from '../fleet-repo/fleet-repo.service.js';

/** One fleet source at one commit (and cluster inventory): validate, then apply or refuse. */
@Processor('fleet-reconcile')
export class FleetReconcileProcessor extends QueueWorker<'fleet-reconcile'> {
  readonly queue = 'fleet-reconcile' as const;

  constructor(
    private readonly fleet: FleetRepoService,
    protected readonly metrics: HubMetrics,
  ) {
    super();
  }

  protected handle(p: QueuePayloads['fleet-reconcile']) {
    return this.fleet.reconcile(p.fleetSourceId, p.commit);
  }
}
