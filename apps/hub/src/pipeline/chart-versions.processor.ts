import { Processor } from '@nestjs/bullmq';
import type { QueuePayloads } from '@flotilla/contract';
import { HubMetrics } from '../metrics/hub-metrics.service.js';
import { QueueWorker } from '../queues/queue-worker.js';
import { ChartVersionWatch } from '../desired-state/chart-versions.service.js';

/** The repeatable chart version check (JobQueues.scheduleChartVersionChecks): one per interval, fleet-wide. */
@Processor('chart-versions')
export class ChartVersionsProcessor extends QueueWorker<'chart-versions'> {
  readonly queue = 'chart-versions' as const;

  constructor(
    private readonly watch: ChartVersionWatch,
    protected readonly metrics: HubMetrics,
  ) {
    super();
  }

  protected async handle(_payload: QueuePayloads['chart-versions']) {
    return this.watch.check();
  }
}
