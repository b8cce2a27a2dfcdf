import { Injectable, Logger, type OnApplicationBootstrap } from '@nestjs/common';
import { Database } from './database.js';
import { keepPartitionsAhead } from './partitions.js';

/**
 * Creates the coming months' partitions of sync runs and audit events when the hub starts (the
 * retention job does it again on every run). A failure here costs nothing an insert would notice:
 * rows no month covers go to the DEFAULT partition and move into their month on the next pass.
 */
@Injectable()
export class PartitionKeeper implements OnApplicationBootstrap {
  private readonly logger = new Logger(PartitionKeeper.name);

  constructor(private readonly db: Database) {}

  async onApplicationBootstrap(): Promise<void> {
    try {
      const created = await keepPartitionsAhead(this.db.prisma);
      if (created.length > 0) this.logger.log(`partitions created: ${created.join(', ')}`);
    } catch (e) {
      this.logger.warn(
        `partitions: ${e instanceof Error ? e.message : String(e)}; retried by the next retention run`,
      );
    }
  }
}
