import { Inject, Injectable } from '@nestjs/common';
import { AGENT_REFUSAL, type RotateResponse } from '@flotilla/contract';
import { HUB_CONFIG, type HubConfig } from '../config/hub-config.js';
import { Database } from '../db/database.js';
import { HubError } from '../common/hub-error.js';
import { hashSecret, newSecret } from '../common/secrets.js';
import { AuditLog } from '../audit/audit.service.js';
import type { Cluster } from '../generated/prisma/client.js';
import type { AgentRequest } from './agent-auth.guard.js';

/** Rotation of an agent's credential without registering again. */
@Injectable()
export class AgentCredentials {
  constructor(
    private readonly db: Database,
    private readonly audit: AuditLog,
    @Inject(HUB_CONFIG) private readonly config: HubConfig,
  ) {}

  /**
   * A new credential for the cluster; the one presented stays valid for the grace period (requests
   * already in flight, or an agent that crashes before it has stored the new one, still get through).
   * Only the current credential may rotate, so a copied old one cannot mint a fresh credential.
   */
  async rotate(cluster: Cluster, generation: AgentRequest['credentialGeneration']): Promise<RotateResponse> {
    if (generation !== 'current' || !cluster.credentialHash) {
      throw new HubError(
        401,
        AGENT_REFUSAL.credentialRotated,
        `this credential of cluster "${cluster.name}" was already replaced by a rotation; rotate with the new one`,
      );
    }
    const credential = newSecret('fla');
    const now = Date.now();
    const ttl = this.config.auth.credentialTtlSeconds;
    const expiresAt = ttl > 0 ? new Date(now + ttl * 1000) : null;
    const graceUntil = new Date(now + this.config.auth.credentialRotationGraceSeconds * 1000);
    await this.db.prisma.$transaction(async (tx) => {
      // Compare-and-set on the current hash: of two concurrent rotations only one wins.
      const swapped = await tx.cluster.updateMany({
        where: { id: cluster.id, credentialHash: cluster.credentialHash, credentialRevokedAt: null },
        data: {
          credentialHash: hashSecret(credential),
          credentialExpiresAt: expiresAt,
          previousCredentialHash: cluster.credentialHash,
          previousCredentialValidUntil: graceUntil,
        },
      });
      if (swapped.count !== 1) {
        throw new HubError(
          409,
          'conflict',
          `the credential of cluster "${cluster.name}" changed meanwhile; retry`,
        );
      }
      await this.audit.record(
        {
          actor: `agent:${cluster.name}`,
          action: 'cluster.credential-rotated',
          scope: `cluster:${cluster.name}`,
          details: {
            expiresAt: expiresAt?.toISOString() ?? null,
            previousValidUntil: graceUntil.toISOString(),
          },
        },
        tx,
      );
    });
    return {
      clusterId: cluster.id,
      clusterName: cluster.name,
      credential,
      expiresAt: expiresAt?.toISOString() ?? null,
    };
  }
}
