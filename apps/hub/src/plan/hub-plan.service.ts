// POST /api/v1/plan: what merging one revision of a fleet repository over another would do, with the hub's live inventory and mirrors.
import { Inject, Injectable } from '@nestjs/common';
import type { KubeObject } from '@flotilla/contract';
import type { ClusterInfo } from '@flotilla/generators';
import { ManifestError, parseApplicationSources, type Capabilities } from '@flotilla/manifests';
import {
  buildFleetSide,
  planFleetChange,
  PlanSideError,
  sharedRenderKey,
  type ClusterGroupSpec,
  type FleetSide,
  type PlanCandidate,
  type PlanOptions,
  type PlanReport,
} from '@flotilla/plan';
import { HubError, parseInput } from '../common/hub-error.js';
import { HUB_CONFIG, type HubConfig } from '../config/hub-config.js';
import { Database } from '../db/database.js';
import { clusterInfo } from '../desired-state/target-clusters.js';
import type { FleetSource, Repository } from '../generated/prisma/client.js';
import { readFleetFiles } from '../fleet-repo/fleet-commit-checks.js';
import { RenderTools } from '../render/render-tools.service.js';
import { WindowsService } from '../release/windows/windows.service.js';
import { GitMirrorError } from '../sources/git/git-mirror.js';
import { GitMirrorsService } from '../sources/git/git-mirrors.service.js';
import { RepositoriesService } from '../sources/repositories/repositories.service.js';
import { planBody } from './plan-request.js';
import { PlanRepositories, type PlanRepositoryIndex } from './plan-repositories.js';

/** What both sides of one plan share. */
interface PlanScope {
  source: FleetSource;
  clusters: ClusterInfo[];
  /** The ClusterGroups of the source as last applied: the live labels carry theirs. */
  applied: ClusterGroupSpec[];
  repositories: PlanRepositories;
  capabilities: Capabilities;
}

/**
 * The plan `flotilla plan` computes offline (libs/plan, the same code), computed by the hub: the
 * fleet repository read from the hub's mirror at both revisions (fetched once when one is unknown),
 * the appsets expanded over the hub's live inventory (each cluster's labels with the source's
 * ClusterGroups moved from the applied commit to the side's), the application repositories read
 * from the mirrors, rendered with the hub's render tools. Changes nothing: no target, bundle, ref or
 * audit row is written.
 */
@Injectable()
export class HubPlanService {
  constructor(
    private readonly db: Database,
    private readonly mirrors: GitMirrorsService,
    private readonly repos: RepositoriesService,
    private readonly tools: RenderTools,
    private readonly windows: WindowsService,
    @Inject(HUB_CONFIG) private readonly config: HubConfig,
  ) {}

  async plan(body: unknown): Promise<PlanReport> {
    const input = parseInput(planBody, body);
    const source = await this.fleetSourceOf(input.fleetSource);
    const fleetRepo = await this.db.prisma.repository.findUnique({ where: { url: source.repoUrl } });
    if (!fleetRepo)
      throw new HubError(
        409,
        'repository-not-fetched',
        `the fleet repository ${source.repoUrl} is not registered yet`,
        'fleetSource',
      );
    const fetched = { done: false };
    const base = await this.commitOf(fleetRepo, input.base, 'base', fetched);
    const head = await this.commitOf(fleetRepo, input.head, 'head', fetched);
    const repositories = new PlanRepositories(this.mirrors.mirrors, await this.repositoryIndex(fleetRepo));
    const scope: PlanScope = {
      source,
      clusters: (await this.db.prisma.cluster.findMany({ orderBy: { name: 'asc' } })).map(clusterInfo),
      applied: await this.appliedGroups(source.id),
      repositories,
      capabilities: { kubeVersion: this.config.render.helmKubeVersion, apiVersions: [] },
    };
    try {
      const baseSide = await this.side('base', base, scope);
      const headSide = await this.side('head', head, scope);
      return comparedSides(baseSide, headSide, {
        at: input.at === undefined ? new Date() : new Date(input.at),
        deletionGuardPercent: this.config.appsets.deletionGuardPercent,
        otherWindows: await this.otherWindows(source.id),
      });
    } catch (e) {
      throw sideFailure(e);
    } finally {
      repositories.remove();
    }
  }

  /** The fleet source named by id or repository URL; none named: the hub's one source. */
  private async fleetSourceOf(ref: string | undefined): Promise<FleetSource> {
    const rows =
      ref === undefined
        ? await this.db.prisma.fleetSource.findMany({ orderBy: { createdAt: 'asc' } })
        : await this.db.prisma.fleetSource.findMany({
            where: { OR: [{ id: ref }, { repoUrl: ref }] },
            orderBy: { createdAt: 'asc' },
          });
    const [first] = rows;
    if (first && rows.length === 1) return first;
    if (!first)
      throw new HubError(
        404,
        'not-found',
        ref === undefined
          ? 'the hub follows no fleet repository; POST /api/v1/fleet-sources first'
          : `fleet source "${ref}" does not exist (neither an id nor a repository URL the hub follows)`,
        'fleetSource',
      );
    throw new HubError(
      400,
      'fleet-source-ambiguous',
      `${ref === undefined ? 'the hub follows' : `"${ref}" names`} ${rows.length} fleet sources (${rows.map((r) => `${r.id}: ${r.repoUrl} ${r.path || '.'}`).join(', ')}); give fleetSource as one of their ids`,
      'fleetSource',
    );
  }

  /**
   * The commit `revision` names in the fleet repository's mirror. An unknown one may be newer than
   * the last poll (a pull request's head): the mirror is fetched once per plan, then asked again.
   */
  private async commitOf(
    repo: Repository,
    revision: string,
    field: 'base' | 'head',
    fetched: { done: boolean },
  ): Promise<string> {
    const resolve = () => this.mirrors.mirrors.resolve(repo.id, revision);
    if (this.mirrors.mirrors.hasMirror(repo.id)) {
      try {
        return resolve();
      } catch (e) {
        if (!(e instanceof GitMirrorError)) throw e;
      }
    }
    if (!fetched.done) {
      fetched.done = true;
      try {
        await this.repos.fetchMirror(repo.id);
      } catch (e) {
        if (!(e instanceof GitMirrorError)) throw e;
        throw new HubError(502, e.code, `${field} ${revision}: ${e.message}`, field);
      }
      try {
        return resolve();
      } catch (e) {
        if (!(e instanceof GitMirrorError)) throw e;
      }
    }
    throw new HubError(
      404,
      'unknown-revision',
      `${field} "${revision}" is not a branch, tag or commit of ${repo.url} (the hub fetched it just now)`,
      field,
    );
  }

  private async repositoryIndex(fleetRepo: Repository): Promise<PlanRepositoryIndex> {
    const rows = await this.db.prisma.repository.findMany({ select: { id: true, url: true } });
    return {
      fleet: { id: fleetRepo.id, url: fleetRepo.url },
      byUrl: new Map(rows.filter((r) => this.mirrors.mirrors.hasMirror(r.id)).map((r) => [r.url, r.id])),
    };
  }

  private async appliedGroups(sourceId: string): Promise<ClusterGroupSpec[]> {
    const rows = await this.db.prisma.fleetManaged.findMany({
      where: { fleetSourceId: sourceId, kind: 'ClusterGroup' },
      select: { object: true },
    });
    return rows.map((r) => {
      const spec = (r.object as { spec?: Partial<ClusterGroupSpec> } | null)?.spec ?? {};
      return {
        clusters: spec.clusters ?? [],
        clusterPatterns: spec.clusterPatterns ?? [],
        labels: spec.labels ?? {},
      };
    });
  }

  /**
   * The live windows this fleet source does not declare (made through the API, or by another fleet
   * source): they hold targets on both sides alike. The source's own come from each side's files, so
   * a window the change adds, edits or deletes is planned as it would be after the merge.
   */
  private async otherWindows(sourceId: string) {
    const declared = await this.db.prisma.fleetManaged.findMany({
      where: { fleetSourceId: sourceId, kind: 'SyncWindow' },
      select: { name: true },
    });
    const own = new Set(declared.map((m) => m.name));
    return (await this.windows.named()).filter((w) => !own.has(w.name));
  }

  /** One side: the fleet files at `commit` (paths relative to the source's path, as offline), built by libs/plan. */
  private async side(name: 'base' | 'head', commit: string, scope: PlanScope): Promise<FleetSide> {
    const { source, repositories } = scope;
    const prefix = source.path === '' ? '' : `${source.path}/`;
    const files = readFleetFiles(this.mirrors.mirrors, repositories.fleetId, commit, source.path).map(
      (f) => ({ ...f, path: f.path.startsWith(prefix) ? f.path.slice(prefix.length) : f.path }),
    );
    const { side } = await buildFleetSide(
      { name, revision: commit, files, clusters: scope.clusters, labelledBy: scope.applied },
      {
        repository: (url, revision) => repositories.repository(url, revision, commit),
        render: (c) => this.render(c, commit, scope),
        renderKey: (c) =>
          sharedRenderKey(c, (url, path, revision) =>
            repositories
              .repository(url, revision, commit)
              .listFiles()
              .includes(
                path === '' || path === '.' ? 'Chart.yaml' : `${path.replace(/\/+$/, '')}/Chart.yaml`,
              ),
          ),
      },
    );
    return side;
  }

  /** Renders a candidate as the hub renders a target, from working trees of the commits its sources name. */
  private async render(
    c: PlanCandidate,
    sideCommit: string,
    scope: PlanScope,
  ): Promise<{ digest: string; objects: readonly KubeObject[] }> {
    const sources = parseApplicationSources(c.spec, c.at);
    const dirs = new Map<string, string>();
    for (const s of sources) {
      if (s.kind === 'chart') continue;
      const { id, sha } = scope.repositories.commitOf(s.repoURL, s.targetRevision, sideCommit);
      dirs.set(`${s.repoURL}\0${s.targetRevision}`, await scope.repositories.checkout(id, sha));
    }
    const dest = c.spec['destination'] as { namespace?: unknown } | undefined;
    const namespace =
      typeof dest?.namespace === 'string' && dest.namespace !== '' ? dest.namespace : undefined;
    const project = typeof c.spec['project'] === 'string' ? c.spec['project'] : undefined;
    const rendered = await this.tools.renderThrough(
      { name: c.name, ...(namespace && { namespace }), ...(project && { project }) },
      sources,
      scope.capabilities,
      {
        dirOf: (url, revision, at) => {
          const dir = dirs.get(`${url}\0${revision}`);
          if (dir === undefined)
            throw new ManifestError('manifest-invalid-source', at, `repository ${url} was not read`);
          return dir;
        },
      },
      [...dirs.values()],
      c.at,
      `target ${c.name} renders no objects`,
      // A plan shows what would happen: it judges chart provenance but records nothing.
      { record: false },
    );
    return { digest: rendered.digest, objects: rendered.manifests };
  }
}

/** A side that could not be built, as the API answers it: the lib's own code, the side as the path. */
function sideFailure(e: unknown): unknown {
  if (!(e instanceof PlanSideError)) return e;
  const cause: unknown = e.cause;
  const code =
    typeof cause === 'object' && cause !== null && typeof (cause as { code?: unknown }).code === 'string'
      ? (cause as { code: string }).code
      : e.code;
  return new HubError(422, code, e.message, e.side);
}

/**
 * libs/plan's comparison. It refuses, with a plain Error, what the hub would refuse of the head (a
 * project or rollout it cannot read): a 422. Anything else (a TypeError, …) is the hub's own failure.
 */
function comparedSides(base: FleetSide, head: FleetSide, options: PlanOptions): PlanReport {
  try {
    return planFleetChange(base, head, options);
  } catch (e) {
    if (e instanceof Error && e.constructor === Error) throw new HubError(422, 'plan-refused', e.message);
    throw e;
  }
}
