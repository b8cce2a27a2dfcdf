import { createHash } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { Database } from '../db/database.js';
import { JobQueues } from '../queues/job-queues.service.js';

/**
 * Asking desired state to run again. Whatever changes an expansion's inputs (a pushed commit, a
 * cluster's labels or capabilities, a project, the appset itself) asks here; the expansion job
 * itself is desired-state's. The job id hashes every input, so asking twice with nothing changed
 * queues one job.
 */
@Injectable()
export class ExpansionRequests {
  constructor(
    private readonly db: Database,
    private readonly queues: JobQueues,
  ) {}

  /**
   * Queues an expansion whose job id is a hash of everything it reads (document, inventory, resolved
   * refs): asking twice with nothing changed is one job.
   */
  async requestExpand(appSetId: string): Promise<void> {
    const row = await this.db.prisma.applicationSet.findUnique({ where: { id: appSetId } });
    if (!row) return;
    const clusters = await this.db.prisma.cluster.findMany({
      orderBy: { name: 'asc' },
      // A cluster's reported capabilities change what its charts render.
      select: {
        name: true,
        server: true,
        labels: true,
        annotations: true,
        kubeVersion: true,
        apiVersions: true,
      },
    });
    const refs = await this.db.prisma.repositoryRef.findMany({
      where: { repository: { url: { in: row.repoUrls } } },
      orderBy: [{ repositoryId: 'asc' }, { ref: 'asc' }],
      select: { repositoryId: true, ref: true, sha: true },
    });
    // The project bounds the expansion: a changed project is a new input.
    const project = await this.db.prisma.project.findUnique({
      where: { name: row.project },
      select: { updatedAt: true },
    });
    // Admission policies judge the bundles before release: new ones are a new input.
    const policies = await this.db.prisma.admissionPolicyObject.aggregate({
      _max: { updatedAt: true },
      _count: true,
    });
    // An open break-glass may let a policy's Deny through (flotilla.dev/break-glass: allow): a refresh
    // after opening one judges the targets again.
    const breakGlass = await this.db.prisma.breakGlass.findMany({
      where: { closedAt: null, expiresAt: { gt: new Date() } },
      select: { id: true },
      orderBy: { id: 'asc' },
    });
    const policyState = [
      policies._count,
      policies._max.updatedAt?.toISOString() ?? null,
      breakGlass.map((b) => b.id),
    ];
    const inputsHash = createHash('sha256')
      .update(
        JSON.stringify([
          row.updatedAt.toISOString(),
          row.spec,
          clusters,
          refs,
          project?.updatedAt ?? null,
          policyState,
        ]),
      )
      .digest('hex')
      .slice(0, 24);
    await this.queues.enqueue('appset-expand', { appSetId, inputsHash });
  }

  async requestExpandAll(): Promise<void> {
    for (const a of await this.db.prisma.applicationSet.findMany({ select: { id: true } }))
      await this.requestExpand(a.id);
  }

  async requestExpandForRepository(url: string): Promise<void> {
    const rows = await this.db.prisma.applicationSet.findMany({
      where: { repoUrls: { has: url } },
      select: { id: true },
    });
    for (const a of rows) await this.requestExpand(a.id);
  }
}
