import type { AuditActor } from '@flotilla/contract';
import { Injectable } from '@nestjs/common';
import { Database } from '../db/database.js';
import { HubError } from '../common/hub-error.js';
import { AuditLog } from '../audit/audit.service.js';
import { BreakGlassService } from '../break-glass/break-glass.service.js';

/**
 * Who may change a hub object through the API. Objects a fleet source manages are changed in Git:
 * the API refuses, naming the repository file — unless a break-glass is open (an incident cannot
 * wait for a pull request). Then the edit goes through, is audited, and the object shows as
 * diverging from Git until the next commit that writes it.
 */
@Injectable()
export class FleetOwnership {
  constructor(
    private readonly db: Database,
    private readonly breakGlass: BreakGlassService,
    private readonly audit: AuditLog,
  ) {}

  async checkEdit(kind: string, name: string, actor: AuditActor): Promise<void> {
    const managed = await this.db.prisma.fleetManaged.findUnique({ where: { kind_name: { kind, name } } });
    if (!managed) return;
    const source = await this.db.prisma.fleetSource.findUnique({ where: { id: managed.fleetSourceId } });
    const where = `${managed.file} in ${source?.repoUrl ?? 'the fleet repository'}`;
    const open = await this.breakGlass.list('active');
    const glass = open[0];
    if (!glass)
      throw new HubError(
        409,
        'git-managed',
        `${kind} "${name}" is managed by Git: change ${where} (commit ${managed.commit.slice(0, 12)}) instead, or open a break-glass for an emergency edit`,
        managed.file,
      );
    await this.db.prisma.$transaction(async (tx) => {
      await tx.fleetManaged.update({
        where: { kind_name: { kind, name } },
        data: { divergedAt: new Date(), divergedBy: actor, divergedUnder: glass.id },
      });
      await this.audit.record(
        {
          actor,
          action: 'fleet.diverged',
          scope: `fleet-source:${managed.fleetSourceId}`,
          details: { kind, name, file: managed.file, commit: managed.commit, breakGlassId: glass.id },
        },
        tx,
      );
    });
  }
}
