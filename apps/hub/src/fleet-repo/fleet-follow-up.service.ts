import { systemActor } from '@flotilla/contract';
// What follows a change of the fleet outside its transaction: expansions, projects and agents told.
import { Injectable } from '@nestjs/common';
import { Database } from '../db/database.js';
import { AppSetsService } from '../desired-state/appsets.service.js';
import { ProjectsService } from '../projects/projects.service.js';
import { RepositoriesService } from '../sources/repositories/repositories.service.js';
import { ClusterWakeups } from '../wakeups/cluster-wakeups.service.js';
import { ExpansionRequests } from '../wakeups/expansion-requests.service.js';
import type { AppliedCommit } from './fleet-apply.service.js';

/**
 * After a commit is applied: its appsets' repositories are registered and the appsets expanded,
 * its projects reconsidered, and every cluster whose assignments it changes woken.
 */
@Injectable()
export class FleetFollowUp {
  constructor(
    private readonly db: Database,
    private readonly repos: RepositoriesService,
    private readonly appsets: AppSetsService,
    private readonly expansions: ExpansionRequests,
    private readonly projects: ProjectsService,
    private readonly wakeups: ClusterWakeups,
  ) {}

  async afterApply(applied: AppliedCommit): Promise<void> {
    for (const id of applied.appSetIds) {
      const row = await this.db.prisma.applicationSet.findUnique({ where: { id } });
      for (const url of row?.repoUrls ?? [])
        await this.repos.register(url, systemActor('fleet-repo'), undefined, `appset:${row?.name ?? ''}`);
      await this.expansions.requestExpand(id);
    }
    for (const name of applied.projects) await this.projects.reconsider(name);
    // New cluster labels move targets; new policies judge every bundle again before release.
    if (applied.labelsChanged || applied.policiesChanged) await this.expansions.requestExpandAll();
    // An appset's rollout strategy and project travel in its assignments even when no target changes.
    const appSetClusters = await this.appsets.clustersOf(applied.appSetIds);
    // Health rules and admission policies travel in every cluster's assignments.
    const everyCluster =
      applied.healthRulesChanged || applied.policiesChanged ? await this.everyClusterId() : [];
    await this.wakeups.notify([...applied.clusterIds, ...appSetClusters, ...everyCluster]);
  }

  /**
   * A removed source's admission policies no longer hold anything: every target is judged again, and
   * every assignment stops carrying them.
   */
  async policiesRemoved(): Promise<void> {
    await this.expansions.requestExpandAll();
    await this.wakeups.notify(await this.everyClusterId());
  }

  /** Health rules are fleet-wide: when they change, every cluster's assignments (and ETag) do. */
  async healthRulesChanged(): Promise<void> {
    await this.wakeups.notify(await this.everyClusterId());
  }

  private async everyClusterId(): Promise<string[]> {
    return (await this.db.prisma.cluster.findMany({ select: { id: true } })).map((c) => c.id);
  }
}
