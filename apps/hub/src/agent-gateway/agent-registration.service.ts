// An agent's first call: a single-use bootstrap token traded for its cluster's credential.
import { Inject, Injectable } from '@nestjs/common';
import type { RegisterRequest, RegisterResponse } from '@flotilla/contract';
import { HUB_CONFIG, type HubConfig } from '../config/hub-config.js';
import { Database } from '../db/database.js';
import { HubError } from '../common/hub-error.js';
import { hashSecret, newSecret } from '../common/secrets.js';
import { AuditLog } from '../audit/audit.service.js';

@Injectable()
export class AgentRegistration {
  constructor(
    private readonly db: Database,
    private readonly audit: AuditLog,
    @Inject(HUB_CONFIG) private readonly config: HubConfig,
  ) {}

  /** Trades a bootstrap token for a credential. Any problem is a 401 and changes nothing. */
  async register(req: RegisterRequest): Promise<RegisterResponse> {
    const token = await this.usableToken(req);
    const credential = newSecret('fla');
    const ttl = this.config.auth.credentialTtlSeconds;
    const expiresAt = ttl > 0 ? new Date(Date.now() + ttl * 1000) : null;
    await this.db.prisma.$transaction(async (tx) => {
      // Claim the token only if still unused: two agents racing with one token, one wins.
      const claimed = await tx.bootstrapToken.updateMany({
        where: { id: token.id, usedAt: null },
        data: { usedAt: new Date() },
      });
      if (claimed.count !== 1) {
        throw new HubError(
          401,
          'bootstrap-token-used',
          'the bootstrap token was just used by another registration',
          'bootstrapToken',
        );
      }
      await tx.cluster.update({
        where: { id: token.clusterId },
        data: {
          credentialHash: hashSecret(credential),
          credentialExpiresAt: expiresAt,
          credentialRevokedAt: null,
          previousCredentialHash: null,
          previousCredentialValidUntil: null,
          registeredAt: new Date(),
          agentVersion: req.agentVersion ?? null,
          lastSeenAt: new Date(),
        },
      });
      await this.audit.record(
        {
          actor: `agent:${req.clusterName}`,
          action: 'cluster.registered',
          scope: `cluster:${req.clusterName}`,
          details: { agentVersion: req.agentVersion ?? null },
        },
        tx,
      );
    });
    return {
      clusterId: token.clusterId,
      clusterName: token.cluster.name,
      credential,
      expiresAt: expiresAt?.toISOString() ?? null,
    };
  }

  /** The request's bootstrap token, refused (401, saying why) unless known, its cluster's, unused and unexpired. */
  private async usableToken(req: RegisterRequest) {
    const token = await this.db.prisma.bootstrapToken.findUnique({
      where: { tokenHash: hashSecret(req.bootstrapToken) },
      include: { cluster: true },
    });
    if (!token)
      throw new HubError(
        401,
        'bootstrap-token-invalid',
        'the bootstrap token is not known to this hub; ask an admin for a new one',
        'bootstrapToken',
      );
    if (token.cluster.name !== req.clusterName) {
      throw new HubError(
        401,
        'bootstrap-token-invalid',
        `the bootstrap token was issued for another cluster, not "${req.clusterName}"`,
        'clusterName',
      );
    }
    if (token.usedAt) {
      throw new HubError(
        401,
        'bootstrap-token-used',
        `the bootstrap token was already used at ${token.usedAt.toISOString()}; tokens are single-use, ask an admin for a new one`,
        'bootstrapToken',
      );
    }
    if (token.expiresAt.getTime() <= Date.now()) {
      throw new HubError(
        401,
        'bootstrap-token-expired',
        `the bootstrap token expired at ${token.expiresAt.toISOString()}; ask an admin for a new one`,
        'bootstrapToken',
      );
    }
    return token;
  }
}
