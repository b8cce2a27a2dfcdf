import { Processor } from '@nestjs/bullmq';
import type { QueuePayloads } from '@flotilla/contract';
import { Database } from '../db/database.js';
import { HubMetrics } from '../metrics/hub-metrics.service.js';
import { QueueWorker } from '../queues/queue-worker.js';
import { FleetRepoService } from '../fleet-repo/fleet-repo.service.js';
import { RepositoriesService } from '../sources/repositories/repositories.service.js';
import { ExpansionRequests } from '../wakeups/expansion-requests.service.js';

/** Fetch a mirror, resolve its tracked refs, and re-expand the appsets that read it when a ref moved. */
// Fetches wait on the network, not the CPU: several repositories at once.
@Processor('source-sync', { concurrency: 4 })
export class SourceSyncProcessor extends QueueWorker<'source-sync'> {
  readonly queue = 'source-sync' as const;

  constructor(
    private readonly repos: RepositoriesService,
    private readonly expansions: ExpansionRequests,
    private readonly db: Database,
    private readonly fleet: FleetRepoService,
    protected readonly metrics: HubMetrics,
  ) {
    super();
  }

  protected async handle(p: QueuePayloads['source-sync']) {
    const result = await this.repos.syncNow(p.repositoryId);
    if (result.changed) {
      const repo = await this.db.prisma.repository.findUnique({ where: { id: p.repositoryId } });
      if (repo) await this.expansions.requestExpandForRepository(repo.url);
    }
    if (result.ok) {
      // Fleet sources follow their own revision (not a tracked ref): asked after every good fetch; a
      // commit already applied is one deduplicated job.
      const repo = await this.db.prisma.repository.findUnique({ where: { id: p.repositoryId } });
      if (repo) await this.fleet.requestForRepository(repo.url);
    }
    // A failed fetch is recorded on the repository and retried by the next poll, not by BullMQ.
    return result;
  }
}
