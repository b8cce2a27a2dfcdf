import { Processor } from '@nestjs/bullmq';
import type { QueuePayloads } from '@flotilla/contract';
import { Database } from '../db/database.js';
import { HubMetrics } from '../metrics/hub-metrics.service.js';
import { ClusterWakeups } from '../wakeups/cluster-wakeups.service.js';
import { QueueWorker } from '../queues/queue-worker.js';
import { normalisePath } from '../sources/git/git-mirror.js';
import { GitMirrorsService } from '../sources/git/git-mirrors.service.js';
import { RepositoriesService } from '../sources/repositories/repositories.service.js';
import { RenderService } from './render.service.js';

/**
 * Re-renders one (repository, commit, path) as a plain or committed-kustomization render and wakes
 * the clusters whose targets point at the bundle it stores. Expansion renders inline (so a bad path
 * changes no target); this queue restores a bundle that was pruned by an operator. Targets whose
 * digest differs (per-target kustomize options, or a newer expansion) are left to their expansion:
 * a repair never repoints a target at another bundle. Any replica may take the job, so one whose
 * mirror lacks the commit fetches it first.
 */
@Processor('render')
export class RenderProcessor extends QueueWorker<'render'> {
  readonly queue = 'render' as const;

  constructor(
    private readonly render: RenderService,
    private readonly db: Database,
    private readonly wakeups: ClusterWakeups,
    private readonly repos: RepositoriesService,
    private readonly mirrors: GitMirrorsService,
    protected readonly metrics: HubMetrics,
  ) {
    super();
  }

  protected async handle(p: QueuePayloads['render']) {
    const repo = await this.db.prisma.repository.findUnique({ where: { id: p.repositoryId } });
    if (!repo) return { digest: null };
    if (this.mirrors.mirrors.missingCommits(repo.id, [p.revision]).length > 0)
      await this.repos.fetchMirror(repo.id);
    const digest = await this.render.render({
      repositoryId: repo.id,
      repoUrl: repo.url,
      revision: p.revision,
      path: p.path,
    });
    const served = await this.db.prisma.target.findMany({
      where: {
        repoUrl: repo.url,
        desiredRevision: p.revision,
        sourcePath: { in: [p.path, normalisePath(p.path)] },
        bundleDigest: digest,
      },
      select: { clusterId: true },
    });
    await this.wakeups.notify([...new Set(served.map((t) => t.clusterId))]);
    return { digest, targets: served.length };
  }
}
