import { Inject, Injectable, Logger, type OnApplicationBootstrap, type Type } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { HUB_CONFIG, type HubConfig } from '../config/hub-config.js';
import { Database } from '../db/database.js';
import { checkQueueHandlers } from '../queues/queue-handlers.js';
import { JobQueues } from '../queues/job-queues.service.js';
import type { QueueWorker } from '../queues/queue-worker.js';
import type { QueueName } from '@flotilla/contract';
import { ExpansionRequests } from '../wakeups/expansion-requests.service.js';

export const QUEUE_HANDLERS = Symbol('QUEUE_HANDLERS');

/** Worker role start-up: check the handler wiring, (re)schedule polling and retention, catch up on expansions. */
@Injectable()
export class WorkerBootstrap implements OnApplicationBootstrap {
  private readonly logger = new Logger(WorkerBootstrap.name);

  constructor(
    @Inject(QUEUE_HANDLERS) private readonly handlers: Type<QueueWorker<QueueName>>[],
    @Inject(HUB_CONFIG) private readonly config: HubConfig,
    private readonly moduleRef: ModuleRef,
    private readonly db: Database,
    private readonly queues: JobQueues,
    private readonly expansions: ExpansionRequests,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    checkQueueHandlers(
      this.handlers.map((h) => ({ queue: this.moduleRef.get(h, { strict: false }).queue, name: h.name })),
    );
    const repos = await this.db.prisma.repository.findMany({ select: { id: true } });
    for (const r of repos) await this.queues.schedulePoll(r.id, this.config.sources.pollIntervalSeconds);
    await this.queues.scheduleRetention(this.config.retention.intervalMinutes);
    if (this.config.render.helmRepositoryPollSeconds > 0)
      await this.queues.scheduleChartVersionChecks(this.config.render.helmRepositoryPollSeconds);
    else await this.queues.unscheduleChartVersionChecks();
    await this.expansions.requestExpandAll();
    this.logger.log(
      `worker ready: ${this.handlers.length} queue handlers, ${repos.length} repositories polled`,
    );
  }
}
