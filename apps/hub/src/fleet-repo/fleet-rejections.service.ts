import { systemActor } from '@flotilla/contract';
// A fleet commit (or revision) the hub refuses: the source shows the error, and the audit log has it once.
import { Injectable, Logger } from '@nestjs/common';
import { AuditLog } from '../audit/audit.service.js';
import { toJson } from '../common/json.js';
import { Database } from '../db/database.js';
import type { FleetSource } from '../generated/prisma/client.js';

@Injectable()
export class FleetRejections {
  private readonly logger = new Logger(FleetRejections.name);

  constructor(
    private readonly db: Database,
    private readonly audit: AuditLog,
  ) {}

  /** Sets the source's status to Error with `error`; the same error at the same commit is not recorded again. */
  async reject(source: FleetSource, commit: string | null, error: Record<string, unknown>): Promise<void> {
    const same =
      source.status === 'Error' &&
      source.seenCommit === commit &&
      JSON.stringify(source.error) === JSON.stringify(error);
    if (same) return;
    await this.db.prisma.fleetSource.update({
      where: { id: source.id },
      data: { status: 'Error', error: toJson(error), ...(commit !== null && { seenCommit: commit }) },
    });
    await this.audit.record({
      actor: systemActor('fleet-repo'),
      action: 'fleet.rejected',
      scope: `fleet-source:${source.id}`,
      details: { repoUrl: source.repoUrl, commit, ...error },
    });
    this.logger.warn(`fleet source ${source.repoUrl}: ${String(error['code'])}: ${String(error['message'])}`);
  }
}
