import type { AuditActor, ClusterView, Page } from '@flotilla/contract';
import { pageArgs, pageOf, type PageQuery } from '../common/name-page.js';
import { Inject, Injectable } from '@nestjs/common';
import { z } from 'zod';
import { HUB_CONFIG, type HubConfig } from '../config/hub-config.js';
import { Database } from '../db/database.js';
import { HubError } from '../common/hub-error.js';
import { asRecord, toJson } from '../common/json.js';
import { hashSecret, newSecret } from '../common/secrets.js';
import { AuditLog } from '../audit/audit.service.js';
import type { Cluster } from '../generated/prisma/client.js';
import { SYNC_STATUS_SELECT, syncStatusOf } from '../desired-state/sync-status.js';

const labelKey = z
  .string()
  .regex(/^([a-z0-9.-]+\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/, 'not a valid label key');

export const createClusterSchema = z.object({
  name: z
    .string()
    .regex(
      /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/,
      'lower-case letters, digits and "-", starting and ending alphanumeric',
    )
    .max(63),
  server: z.string().optional(),
  labels: z.record(labelKey, z.string().max(63)).default({}),
  annotations: z.record(z.string().min(1), z.string()).default({}),
});
export type CreateCluster = z.infer<typeof createClusterSchema>;

export type { ClusterView } from '@flotilla/contract';

/** The cluster inventory and the bootstrap tokens that let an agent join it. */
@Injectable()
export class ClustersService {
  constructor(
    private readonly db: Database,
    private readonly audit: AuditLog,
    @Inject(HUB_CONFIG) private readonly config: HubConfig,
  ) {}

  async create(input: CreateCluster, actor: AuditActor) {
    const existing = await this.db.prisma.cluster.findUnique({ where: { name: input.name } });
    if (existing) {
      throw new HubError(
        409,
        'already-exists',
        `cluster "${input.name}" already exists; POST /api/v1/clusters/${input.name}/bootstrap-tokens issues a new token`,
        'name',
      );
    }
    const token = newSecret('flb');
    const expiresAt = new Date(Date.now() + this.config.auth.bootstrapTokenTtlSeconds * 1000);
    const cluster = await this.db.prisma.$transaction(async (tx) => {
      const c = await tx.cluster.create({
        data: {
          name: input.name,
          server: input.server ?? '',
          labels: toJson(input.labels),
          annotations: toJson(input.annotations),
          bootstrapTokens: { create: { tokenHash: hashSecret(token), expiresAt } },
        },
      });
      await this.audit.record(
        { actor, action: 'cluster.created', scope: `cluster:${c.name}`, details: { labels: input.labels } },
        tx,
      );
      return c;
    });
    return { cluster: await this.view(cluster), bootstrapToken: token, expiresAt: expiresAt.toISOString() };
  }

  async issueBootstrapToken(name: string, actor: AuditActor) {
    const cluster = await this.db.prisma.cluster.findUnique({ where: { name } });
    if (!cluster) throw HubError.notFound('cluster', name);
    const token = newSecret('flb');
    const expiresAt = new Date(Date.now() + this.config.auth.bootstrapTokenTtlSeconds * 1000);
    await this.db.prisma.$transaction(async (tx) => {
      await tx.bootstrapToken.create({
        data: { clusterId: cluster.id, tokenHash: hashSecret(token), expiresAt },
      });
      await this.audit.record(
        { actor, action: 'cluster.bootstrap-token-issued', scope: `cluster:${name}` },
        tx,
      );
    });
    return { cluster: await this.view(cluster), bootstrapToken: token, expiresAt: expiresAt.toISOString() };
  }

  async revokeCredential(name: string, actor: AuditActor) {
    const cluster = await this.db.prisma.cluster.findUnique({ where: { name } });
    if (!cluster) throw HubError.notFound('cluster', name);
    const updated = await this.db.prisma.$transaction(async (tx) => {
      const c = await tx.cluster.update({
        where: { id: cluster.id },
        // Both the current credential and one still in its rotation grace period stop at once.
        data: {
          credentialRevokedAt: new Date(),
          previousCredentialHash: null,
          previousCredentialValidUntil: null,
        },
      });
      await this.audit.record({ actor, action: 'cluster.credential-revoked', scope: `cluster:${name}` }, tx);
      return c;
    });
    return this.view(updated);
  }

  async list(): Promise<ClusterView[]> {
    const clusters = await this.db.prisma.cluster.findMany({ orderBy: { name: 'asc' } });
    return Promise.all(clusters.map((c) => this.view(c)));
  }

  /** One page of clusters by name (see common/name-page.ts). */
  async page(q: PageQuery): Promise<Page<ClusterView>> {
    const { where, take } = pageArgs(q);
    const page = pageOf(await this.db.prisma.cluster.findMany({ where, take, orderBy: { name: 'asc' } }), q);
    return { items: await Promise.all(page.rows.map((c) => this.view(c))), nextCursor: page.nextCursor };
  }

  async get(name: string): Promise<ClusterView> {
    const cluster = await this.db.prisma.cluster.findUnique({ where: { name } });
    if (!cluster) throw HubError.notFound('cluster', name);
    return this.view(cluster);
  }

  private async view(c: Cluster): Promise<ClusterView> {
    const targets = await this.db.prisma.target.findMany({
      where: { clusterId: c.id },
      select: {
        ...SYNC_STATUS_SELECT,
        health: true,
      },
    });
    const counts = { total: targets.length, synced: 0, outOfSync: 0, unknown: 0, healthy: 0, degraded: 0 };
    for (const t of targets) {
      const sync = syncStatusOf(t);
      if (sync === 'Unknown') counts.unknown++;
      else if (sync === 'Synced') counts.synced++;
      else counts.outOfSync++;
      if (t.health === 'Healthy') counts.healthy++;
      if (t.health === 'Degraded') counts.degraded++;
    }
    return {
      id: c.id,
      name: c.name,
      server: c.server,
      labels: asRecord(c.labels),
      annotations: asRecord(c.annotations),
      registered: c.credentialHash != null && c.credentialRevokedAt == null,
      agentVersion: c.agentVersion,
      agentFeatures: c.agentFeatures,
      capabilities: c.kubeVersion
        ? {
            kubeVersion: c.kubeVersion,
            apiVersions: c.apiVersions,
            reportedAt: c.capabilitiesAt?.toISOString() ?? null,
          }
        : null,
      lastSeenAt: c.lastSeenAt?.toISOString() ?? null,
      createdAt: c.createdAt.toISOString(),
      targets: counts,
    };
  }
}
