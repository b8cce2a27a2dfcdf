import { type CanActivate, type ExecutionContext, Inject, Injectable } from '@nestjs/common';
import type { Request } from 'express';
import { HUB_CONFIG, type HubConfig } from '../config/hub-config.js';
import { Database } from '../db/database.js';
import { AGENT_REFUSAL } from '@flotilla/contract';
import { HubError } from '../common/hub-error.js';
import { bearerToken, hashSecret } from '../common/secrets.js';
import { RateLimiter } from '../auth/rate-limiter.service.js';
import type { Cluster } from '../generated/prisma/client.js';

export type AgentRequest = Request & {
  cluster: Cluster;
  /** `previous`: the credential a rotation replaced, still accepted during its grace period. */
  credentialGeneration: 'current' | 'previous';
};

/**
 * An agent is its cluster: the bearer credential's hash picks the one cluster it may read and report
 * for. After a rotation the replaced credential works until its grace period ends; a revoked cluster
 * is refused at once whichever credential it shows. Each agent has its own rate limit.
 */
@Injectable()
export class AgentAuthGuard implements CanActivate {
  constructor(
    private readonly db: Database,
    private readonly limiter: RateLimiter,
    @Inject(HUB_CONFIG) private readonly config: HubConfig,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const req = context.switchToHttp().getRequest<AgentRequest>();
    const token = bearerToken(req.headers.authorization);
    if (!token)
      throw new HubError(
        401,
        'unauthorized',
        'send the agent credential as "Authorization: Bearer <credential>"',
      );
    const hash = hashSecret(token);
    let cluster = await this.db.prisma.cluster.findUnique({ where: { credentialHash: hash } });
    let generation: AgentRequest['credentialGeneration'] = 'current';
    if (!cluster) {
      cluster = await this.db.prisma.cluster.findUnique({ where: { previousCredentialHash: hash } });
      generation = 'previous';
      const until = cluster?.previousCredentialValidUntil;
      if (cluster && (!until || until.getTime() <= Date.now())) {
        throw new HubError(
          401,
          AGENT_REFUSAL.credentialRotated,
          `this credential of cluster "${cluster.name}" was replaced by a rotation and its grace period ended${until ? ` at ${until.toISOString()}` : ''}; use the new one`,
        );
      }
    }
    if (!cluster)
      throw new HubError(
        401,
        AGENT_REFUSAL.credentialUnknown,
        'unknown agent credential; register the agent again with a new bootstrap token',
      );
    if (cluster.credentialRevokedAt) {
      throw new HubError(
        401,
        AGENT_REFUSAL.credentialRevoked,
        `the credential of cluster "${cluster.name}" was revoked; register again with a new bootstrap token`,
      );
    }
    if (cluster.credentialExpiresAt && cluster.credentialExpiresAt.getTime() <= Date.now()) {
      throw new HubError(
        401,
        AGENT_REFUSAL.credentialExpired,
        `the credential of cluster "${cluster.name}" expired; register again with a new bootstrap token`,
      );
    }
    await this.limiter.take(
      `agent:${cluster.id}`,
      this.config.auth.rateLimitPerMinute.agent,
      `the agent of cluster "${cluster.name}"`,
    );
    req.cluster = cluster;
    req.credentialGeneration = generation;
    return true;
  }
}
