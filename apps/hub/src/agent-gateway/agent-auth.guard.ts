import { type CanActivate, type ExecutionContext, Inject, Injectable } from '@nestjs/common';
import type { Request } from 'express';
import { HUB_CONFIG, type HubConfig } from '../config/hub-config.js';
import { Database } from '../db/database.js';
import { AGENT_REFUSAL } from '@flotilla/contract';
import { HubError } from '../common/hub-error.js';
import { bearerToken, hashSecret } from '../common/secrets.js';
import { RateLimiter } from '../auth/rate-limiter.service.js';
import { TickBatcher } from '../common/tick-batcher.js';
import type { Cluster } from '../generated/prisma/client.js';

export type AgentRequest = Request & {
  cluster: Cluster;
  /** `previous`: the credential a rotation replaced, still accepted during its grace period. */
  credentialGeneration: 'current' | 'previous';
};

/** The cluster a credential hash picks, and which of its credentials it is. */
interface CredentialMatch {
  cluster: Cluster;
  generation: AgentRequest['credentialGeneration'];
}

/**
 * Credential look-ups asked for within this many ms share one statement: after a release a burst of
 * agents re-polls, fetches bundles and reports at once. Nothing is cached, so a revocation, rotation
 * or expiry is seen by the next request on every replica.
 */
const CREDENTIAL_BATCH_TICK_MS = 2;
const CREDENTIAL_BATCH_MAX = 500;

/**
 * An agent is its cluster: the bearer credential's hash picks the one cluster it may read and report
 * for. After a rotation the replaced credential works until its grace period ends; a revoked cluster
 * is refused at once whichever credential it shows. Each agent has its own rate limit.
 */
@Injectable()
export class AgentAuthGuard implements CanActivate {
  private readonly lookups: TickBatcher<string, CredentialMatch | undefined>;

  constructor(
    private readonly db: Database,
    private readonly limiter: RateLimiter,
    @Inject(HUB_CONFIG) private readonly config: HubConfig,
  ) {
    this.lookups = new TickBatcher((hashes) => this.clustersOf(hashes), {
      tickMs: CREDENTIAL_BATCH_TICK_MS,
      maxBatchSize: CREDENTIAL_BATCH_MAX,
    });
  }

  /**
   * The clusters these hashes pick, in one statement: a hash that is a cluster's current credential
   * wins over one that is some cluster's replaced credential, as two look-ups in that order would.
   * Each caller gets its own copy of the row (a request updates its copy as the agent announces).
   */
  private async clustersOf(hashes: readonly string[]): Promise<(CredentialMatch | undefined)[]> {
    const wanted = [...new Set(hashes)];
    const rows = await this.db.prisma.cluster.findMany({
      where: { OR: [{ credentialHash: { in: wanted } }, { previousCredentialHash: { in: wanted } }] },
    });
    const current = new Map(rows.flatMap((r) => (r.credentialHash ? [[r.credentialHash, r] as const] : [])));
    const previous = new Map(
      rows.flatMap((r) => (r.previousCredentialHash ? [[r.previousCredentialHash, r] as const] : [])),
    );
    return hashes.map((hash) => {
      const now = current.get(hash);
      if (now) return { cluster: { ...now }, generation: 'current' };
      const replaced = previous.get(hash);
      return replaced && { cluster: { ...replaced }, generation: 'previous' };
    });
  }

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const req = context.switchToHttp().getRequest<AgentRequest>();
    const token = bearerToken(req.headers.authorization);
    if (!token)
      throw new HubError(
        401,
        'unauthorized',
        'send the agent credential as "Authorization: Bearer <credential>"',
      );
    const match = await this.lookups.load(hashSecret(token));
    const cluster = match?.cluster;
    const generation = match?.generation ?? 'current';
    if (cluster && generation === 'previous') {
      const until = cluster.previousCredentialValidUntil;
      if (!until || until.getTime() <= Date.now()) {
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
