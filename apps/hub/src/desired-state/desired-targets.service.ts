// appset → desired targets: the generators run against the inventory and Git, each target placed on its cluster with its bundle rendered.
import { Injectable } from '@nestjs/common';
import {
  generate,
  parseApplicationSet,
  type ApplicationSet,
  type GeneratedTarget,
} from '@flotilla/generators';
import { asRecord } from '../common/json.js';
import { Database } from '../db/database.js';
import type { Cluster } from '../generated/prisma/client.js';
import { ProjectGate, ProjectPolicy } from '../projects/project-policy.service.js';
import { RenderService } from '../render/render.service.js';
import { literalRepoRefs } from '@flotilla/generators';
import { capabilitiesKey, capabilitiesOf } from './cluster-capabilities.js';
import { ExpansionError, fromGeneratorError } from './expansion-error.js';
import type { ResolvedRef } from './expansion-git-reads.js';
import type { DesiredTarget } from './expansion-plan.js';
import { newRenderScope } from './expansion-renders.service.js';
import { ExpansionRepositories, generatorFiles } from './expansion-repositories.service.js';
import { SourcePlacement, type PlacementScope } from './source-placement.service.js';
import { SyncSettingsError } from './sync-settings-fields.js';
import { clusterInfo, clusterOf, indexClusters, type ClusterIndex } from './target-clusters.js';
import { targetSyncSettingsOf } from './target-sync-settings.js';

/**
 * A computed expansion: its targets, the repositories it read, and what it was computed from (refs,
 * the capabilities of the clusters whose charts it rendered) to tell whether that moved meanwhile.
 */
export interface ComputedExpansion {
  desired: DesiredTarget[];
  repoUrls: string[];
  refs: ResolvedRef[];
  /** Cluster id → the capabilities its charts were rendered with (`capabilitiesKey`). */
  capabilities: Map<string, string>;
}

/** What placing the generated targets of one expansion shares. */
interface Placing {
  scope: PlacementScope;
  gate: ProjectGate;
  clusters: ClusterIndex;
  /** Target name → the index of the parameter set that generated it, to refuse a second. */
  seen: Map<string, number>;
  /** Cluster id → the capabilities its charts are rendered with. */
  chartCapabilities: Map<string, string>;
}

@Injectable()
export class DesiredTargets {
  constructor(
    private readonly db: Database,
    private readonly projects: ProjectPolicy,
    private readonly render: RenderService,
    private readonly repositories: ExpansionRepositories,
    private readonly placement: SourcePlacement,
  ) {}

  /**
   * The targets `spec` generates, each with its bundle rendered; throws ExpansionError. `register`
   * false (the preview): use only repositories already fetched, register and fetch nothing.
   */
  async compute(appSetName: string, spec: unknown, register: boolean): Promise<ComputedExpansion> {
    let parsed: ApplicationSet;
    try {
      parsed = parseApplicationSet(spec);
    } catch (e) {
      throw fromGeneratorError(e);
    }
    const git = this.repositories.gitReads();
    try {
      return await this.generateDesired(spec, parsed, {
        appSetName,
        register,
        git,
        repoByUrl: new Map(),
        ...newRenderScope(),
      });
    } catch (e) {
      if (e instanceof ExpansionError) e.refs = git.resolvedRefs();
      throw e;
    }
  }

  private async generateDesired(
    spec: unknown,
    parsed: ApplicationSet,
    scope: PlacementScope,
  ): Promise<ComputedExpansion> {
    const clusters = await this.db.prisma.cluster.findMany({ orderBy: { name: 'asc' } });
    const placing: Placing = {
      scope,
      clusters: indexClusters(clusters),
      gate: await this.gateWithLiteralRepositories(spec, scope),
      seen: new Map(),
      chartCapabilities: new Map(),
    };
    const generated = runGenerators(parsed, clusters, scope);
    // What needs a target's bundle waits until every render has started, so renders overlap.
    const awaitingBundle: (() => Promise<DesiredTarget>)[] = [];
    for (const [i, t] of generated.entries()) awaitingBundle.push(await this.placeTarget(t, i, placing));
    // Errors found without a render (names, clusters, revisions) come first; then the first target,
    // in order, whose render or bundle check failed.
    const desired: DesiredTarget[] = [];
    for (const finish of awaitingBundle) desired.push(await finish());
    return {
      desired,
      repoUrls: [...scope.repoByUrl.keys()].sort(),
      refs: scope.git.resolvedRefs(),
      capabilities: placing.chartCapabilities,
    };
  }

  /**
   * The appset's project gate, after fetching the repositories it names literally (git generators, a
   * fixed template source) up front, because the generators read files synchronously. The project is
   * checked before anything is fetched: a repository outside it is never read.
   */
  private async gateWithLiteralRepositories(spec: unknown, scope: PlacementScope): Promise<ProjectGate> {
    const gate = await this.projects.gateFor(spec);
    if (!(gate instanceof ProjectGate)) throw new ExpansionError(gate.code, gate.message, gate.path);
    const refused = gate.checkLiteralRepositories(spec);
    if (refused) throw new ExpansionError(refused.code, refused.message, refused.path);
    for (const [url, refs] of literalRepoRefs(spec)) await this.repositories.prepared(url, scope, refs);
    return gate;
  }

  /**
   * Places generated target `i` on its cluster and starts its render; the step it returns waits for
   * the bundle, checks it against the project and gives the desired target.
   */
  private async placeTarget(
    t: GeneratedTarget,
    i: number,
    placing: Placing,
  ): Promise<() => Promise<DesiredTarget>> {
    const at = `targets[${i}] (${t.name})`;
    const prev = placing.seen.get(t.name);
    if (prev !== undefined) {
      throw new ExpansionError(
        'duplicate-target',
        `two targets are named "${t.name}" (parameter sets ${prev} and ${i}); make the template's metadata.name unique`,
        `${at}.metadata.name`,
      );
    }
    placing.seen.set(t.name, i);
    const cluster = clusterOf(t, placing.clusters, at);
    const namespace = t.application.spec.destination.namespace || 'default';
    const projectCluster = { name: cluster.name, labels: asRecord(cluster.labels) };
    // A chart renders with its cluster's .Capabilities once the agent reported them.
    const capabilities = capabilitiesOf(cluster, this.render.defaultCapabilities());
    const syncPolicy = syncSettingsOf(t.application.spec, t.name);
    const { gate, scope } = placing;
    const { placed, rendered, readsCapabilities } = await this.placement.place(
      { target: t, at, gate, projectCluster, namespace, capabilities },
      scope,
    );
    // Only a chart reads them: a plain fleet's expansions never wait on capability reports.
    if (readsCapabilities) placing.chartCapabilities.set(cluster.id, capabilitiesKey(cluster));
    return async () => {
      const bundleDigest = await rendered;
      const refusedObject = await gate.checkBundle(at, bundleDigest, projectCluster, namespace);
      if (refusedObject)
        throw new ExpansionError(refusedObject.code, refusedObject.message, refusedObject.path);
      return {
        name: t.name,
        clusterId: cluster.id,
        clusterName: cluster.name,
        namespace,
        ...placed,
        bundleDigest,
        syncPolicy,
        params: t.params,
      };
    };
  }
}

/** The generators' targets, reading only the repositories already prepared. */
function runGenerators(
  parsed: ApplicationSet,
  clusters: Cluster[],
  scope: PlacementScope,
): GeneratedTarget[] {
  try {
    return generate(parsed, {
      clusters: clusters.map((c) => clusterInfo(c)),
      repository: (repoURL, revision) => generatorFiles(scope, repoURL, revision),
    }).targets;
  } catch (e) {
    throw fromGeneratorError(e);
  }
}

/** A target's sync policy and ignore rules; a bad rule fails the expansion, naming the field. */
function syncSettingsOf(spec: GeneratedTarget['application']['spec'], targetName: string) {
  try {
    return targetSyncSettingsOf(spec);
  } catch (e) {
    if (e instanceof SyncSettingsError)
      throw new ExpansionError(e.code, `target "${targetName}": ${e.message}`, e.path);
    throw e;
  }
}
