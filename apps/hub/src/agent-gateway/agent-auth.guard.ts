import { type CanActivate, type ExecutionContext, Injectable } from '@nestjs/common';
import type { Request } from 'express';
import { Database } from '../db/database.js';
import { HubError } from '../common/hub-error.js';
import { bearerToken, hashSecret } from '../common/secrets.js';
import type { Cluster } from '../generated/prisma/client.js';

export type AgentRequest = Request & { cluster: Cluster };

/** An agent is its cluster: the bearer credential's hash picks the one cluster it may read and report for. */
@Injectable()
export class AgentAuthGuard implements CanActivate {
  constructor(private readonly db: Database) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const req = context.switchToHttp().getRequest<AgentRequest>();
    const token = bearerToken(req.headers.authorization);
    if (!token)
      throw new HubError(
        401,
        'unauthorized',
        'send the agent credential as "Authorization: Bearer <credential>"',
      );
    const cluster = await this.db.prisma.cluster.findUnique({ where: { credentialHash: hashSecret(token) } });
    if (!cluster)
      throw new HubError(
        401,
        'unauthorized',
        'unknown agent credential; register the agent again with a new bootstrap token',
      );
    if (cluster.credentialRevokedAt) {
      throw new HubError(
        401,
        'credential-revoked',
        `the credential of cluster "${cluster.name}" was revoked; register again with a new bootstrap token`,
      );
    }
    if (cluster.credentialExpiresAt && cluster.credentialExpiresAt.getTime() <= Date.now()) {
      throw new HubError(
        401,
        'credential-expired',
        `the credential of cluster "${cluster.name}" expired; register again with a new bootstrap token`,
      );
    }
    req.cluster = cluster;
    return true;
  }
}
