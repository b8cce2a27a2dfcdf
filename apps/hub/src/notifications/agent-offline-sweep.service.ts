import { Inject, Injectable } from '@nestjs/common';
import { HUB_CONFIG, type HubConfig } from '../config/hub-config.js';
import { Database } from '../db/database.js';
import { AuditLog } from '../audit/audit.service.js';
import { ExpirySweep } from '../common/expiry-sweep.js';
import { claimOnce } from './notification-once.js';
import { systemActor } from '@flotilla/contract';

/**
 * Records `cluster.offline` when a registered cluster's agent has not polled for
 * CLUSTER_OFFLINE_SECONDS (the threshold rollouts use to skip a cluster), once per silence: the key is
 * the last time it was seen, so an agent that comes back and goes quiet again is told again. Claimed
 * in the audit event's transaction, so replicas sweeping together record it once.
 */
@Injectable()
export class AgentOfflineSweep extends ExpirySweep {
  protected readonly what = 'offline agents';

  constructor(
    private readonly db: Database,
    private readonly audit: AuditLog,
    @Inject(HUB_CONFIG) private readonly config: HubConfig,
  ) {
    super(config);
  }

  protected async sweepExpired(): Promise<number> {
    const before = new Date(Date.now() - this.config.rollouts.offlineAfterSeconds * 1000);
    const quiet = await this.db.prisma.cluster.findMany({
      where: { registeredAt: { not: null }, credentialRevokedAt: null, lastSeenAt: { lt: before } },
      select: { name: true, lastSeenAt: true },
      take: 1000,
    });
    let recorded = 0;
    for (const c of quiet) {
      const lastSeenAt = c.lastSeenAt?.toISOString() ?? 'never';
      await this.db.prisma.$transaction(async (tx) => {
        if (!(await claimOnce(tx, `event:cluster-offline/${c.name}/${lastSeenAt}`))) return;
        await this.audit.record(
          {
            actor: systemActor('agent-offline-sweep'),
            action: 'cluster.offline',
            scope: `cluster:${c.name}`,
            details: { lastSeenAt, offlineAfterSeconds: this.config.rollouts.offlineAfterSeconds },
            origin: null,
          },
          tx,
        );
        recorded += 1;
      });
    }
    return recorded;
  }
}
