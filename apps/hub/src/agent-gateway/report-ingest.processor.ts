import { Processor } from '@nestjs/bullmq';
import type { QueuePayloads } from '@flotilla/contract';
import { Database } from '../db/database.js';
import { HubMetrics } from '../metrics/hub-metrics.service.js';
import { QueueWorker } from '../queues/queue-worker.js';

/**
 * The gateway ingests reports synchronously, inside the request, so the agent learns at once what was
 * stored and can drop its buffer. Nothing enqueues here yet; a job only confirms whether the report id
 * is stored (the hook where deferred work such as auto-rollback will hang).
 */
@Processor('report-ingest')
export class ReportIngestProcessor extends QueueWorker<'report-ingest'> {
  readonly queue = 'report-ingest' as const;

  constructor(
    private readonly db: Database,
    protected readonly metrics: HubMetrics,
  ) {
    super();
  }

  protected async handle(p: QueuePayloads['report-ingest']) {
    const stored = await this.db.prisma.processedReport.findUnique({
      where: { id: p.reportId },
      select: { id: true },
    });
    return { stored: stored !== null };
  }
}
