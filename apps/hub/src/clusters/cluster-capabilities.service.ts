import { Injectable, Logger } from '@nestjs/common';
import type { CapabilitiesResponse, ClusterCapabilities } from '@flotilla/contract';
import { AuditLog } from '../audit/audit.service.js';
import { Database } from '../db/database.js';
import type { Cluster } from '../generated/prisma/client.js';
import { ExpansionRequests } from '../wakeups/expansion-requests.service.js';

/**
 * Stores what an agent reports of its cluster's discovery (Kubernetes version, served API versions)
 * on the cluster row. Charts for that cluster render with it as `.Capabilities`, so a change asks
 * the appsets that render charts there to expand again (the capabilities are part of an
 * expansion's inputs).
 */
@Injectable()
export class ClusterCapabilitiesService {
  private readonly logger = new Logger(ClusterCapabilitiesService.name);

  constructor(
    private readonly db: Database,
    private readonly expansions: ExpansionRequests,
    private readonly audit: AuditLog,
  ) {}

  async report(
    cluster: Pick<Cluster, 'id' | 'name'>,
    reported: ClusterCapabilities,
  ): Promise<CapabilitiesResponse> {
    const apiVersions = [...new Set(reported.apiVersions)].sort();
    const kubeVersion = reported.kubeVersion;
    // Compared under the row lock: two replicas taking the same report write (and audit) it once.
    const before = await this.db.prisma.$transaction(async (tx) => {
      const [row] = await tx.$queryRaw<{ kubeVersion: string | null; apiVersions: string[] }[]>`
        SELECT "kubeVersion", "apiVersions" FROM "Cluster" WHERE "id" = ${cluster.id} FOR UPDATE`;
      if (!row) return undefined;
      if (row.kubeVersion === kubeVersion && row.apiVersions.join('\n') === apiVersions.join('\n'))
        return undefined;
      await tx.cluster.update({
        where: { id: cluster.id },
        data: { kubeVersion, apiVersions, capabilitiesAt: new Date() },
      });
      await this.audit.record(
        {
          actor: `agent:${cluster.name}`,
          action: 'cluster.capabilities-changed',
          scope: `cluster:${cluster.name}`,
          details: {
            kubeVersion: { from: row.kubeVersion, to: kubeVersion },
            apiVersionsAdded: apiVersions.filter((v) => !row.apiVersions.includes(v)),
            apiVersionsRemoved: row.apiVersions.filter((v) => !apiVersions.includes(v)),
          },
        },
        tx,
      );
      return row;
    });
    if (!before) return { changed: false };
    this.logger.log(
      `cluster ${cluster.name} reports Kubernetes ${kubeVersion}, ${apiVersions.length} API versions`,
    );
    // Only what a chart renders depends on them, so a fleet of plain manifests pays nothing when its
    // agents start: the appsets with a chart rendered for this cluster, and those in error (a chart
    // may have refused the version it was given). An expansion computing meanwhile notices the
    // change itself before it writes (see capabilitiesMoved in the expander).
    const appsets = await this.db.prisma.$queryRaw<{ id: string }[]>`
      SELECT DISTINCT t."appSetId" AS "id"
      FROM "Target" t JOIN "RenderRecord" r ON r."digest" = t."bundleDigest"
      WHERE t."clusterId" = ${cluster.id} AND r."renderer" = 'helm'
      UNION
      SELECT "id" FROM "ApplicationSet" WHERE "status" = 'Error'`;
    for (const a of appsets) await this.expansions.requestExpand(a.id);
    return { changed: true };
  }
}
