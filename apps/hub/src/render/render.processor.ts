import { Processor } from '@nestjs/bullmq';
import type { QueuePayloads } from '@flotilla/contract';
import { Database } from '../db/database.js';
import { HubMetrics } from '../metrics/hub-metrics.service.js';
import { ClusterWakeups } from '../queues/cluster-wakeups.service.js';
import { QueueWorker } from '../queues/queue-worker.js';
import { normalisePath } from '../git/git-mirror.js';
import { RenderService } from './render.service.js';

/**
 * Re-renders one (repository, commit, path) and points the targets that want it at the bundle.
 * Expansion renders inline (so a bad path changes no target); this queue repairs targets whose
 * bundle is missing, e.g. after bundles were pruned by an operator.
 */
@Processor('render')
export class RenderProcessor extends QueueWorker<'render'> {
  readonly queue = 'render' as const;

  constructor(
    private readonly render: RenderService,
    private readonly db: Database,
    private readonly wakeups: ClusterWakeups,
    protected readonly metrics: HubMetrics,
  ) {
    super();
  }

  protected async handle(p: QueuePayloads['render']) {
    const repo = await this.db.prisma.repository.findUnique({ where: { id: p.repositoryId } });
    if (!repo) return { digest: null };
    const digest = await this.render.render({
      repositoryId: repo.id,
      repoUrl: repo.url,
      revision: p.revision,
      path: p.path,
    });
    const where = {
      repoUrl: repo.url,
      desiredRevision: p.revision,
      sourcePath: { in: [p.path, normalisePath(p.path)] },
      NOT: { bundleDigest: digest },
    };
    const stale = await this.db.prisma.target.findMany({ where, select: { clusterId: true } });
    await this.db.prisma.target.updateMany({ where, data: { bundleDigest: digest } });
    await this.wakeups.notify(stale.map((t) => t.clusterId));
    return { digest, targets: stale.length };
  }
}
