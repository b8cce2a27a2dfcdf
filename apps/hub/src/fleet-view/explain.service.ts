import { Injectable } from '@nestjs/common';
import type {
  BreakGlass as BreakGlassOverride,
  ExplainHoldView,
  ExplainTargetView,
  ExplainView,
} from '@flotilla/contract';
import {
  explain,
  GeneratorError,
  parseApplicationSet,
  type ExplainedTarget,
  type ClusterInfo,
  type GenerateContext,
  type RepositoryFiles,
} from '@flotilla/generators';
import { safeSourcePath, parseKustomizeOptions } from '@flotilla/manifests';
import { targetWindowStatus, type NamedSyncWindow } from '@flotilla/windows';
import { BreakGlassService } from '../break-glass/break-glass.service.js';
import { asRecord } from '../common/json.js';
import { HubError } from '../common/hub-error.js';
import { Database } from '../db/database.js';
import type { ApplicationSet, Cluster, Target } from '../generated/prisma/client.js';
import { GitMirrorsService } from '../sources/git/git-mirrors.service.js';
import { renderKey } from '../render/render-keys.js';
import { WindowsService } from '../release/windows/windows.service.js';
import { appSetHolds, targetHolds } from './explain-holds.js';

/**
 * Why a cluster gets (or does not get) an appset's targets: the generators re-run over the inventory
 * and the hub's mirrors exactly as an expansion would (reading, never fetching or writing), then
 * each matching target is joined with what is stored — the revision it resolved to, its bundle and
 * render check — and with what holds it: the appset's state, sync windows, break-glass overrides.
 */
@Injectable()
export class ExplainService {
  constructor(
    private readonly db: Database,
    private readonly mirrors: GitMirrorsService,
    private readonly windows: WindowsService,
    private readonly breakGlass: BreakGlassService,
  ) {}

  async explain(clusterName: string, appSetName: string, now = new Date()): Promise<ExplainView> {
    const appSet = await this.db.prisma.applicationSet.findUnique({ where: { name: appSetName } });
    if (!appSet) throw HubError.notFound('appset', appSetName);
    const clusters = await this.db.prisma.cluster.findMany({ orderBy: { name: 'asc' } });
    const row = clusters.find((c) => c.name === clusterName);
    if (!row) throw HubError.notFound('cluster', clusterName);

    const { result, repoIdOf } = await this.generate(appSet, clusters, row);
    const pending = appSet.pendingExpansion as { message?: string } | null;
    const heldByAppSet = appSetHolds({
      status: appSet.status,
      error: appSet.error,
      pendingMessage: pending?.message,
    });

    const names = result.generators.flatMap((g) => g.targets.map((t) => t.name));
    const stored = new Map(
      (await this.db.prisma.target.findMany({ where: { appSetId: appSet.id, name: { in: names } } })).map(
        (t) => [t.name, t],
      ),
    );
    const around: TargetSurroundings = {
      cluster: row.name,
      project: appSet.project,
      now,
      appSetHolds: heldByAppSet,
      stored,
      repoIdOf,
      windows: await this.windows.named(),
      overrides: await this.breakGlass.activeFor(
        names.map((name) => ({ name, clusterName: row.name, appSetName: appSet.name })),
        now,
      ),
    };
    const targets: ExplainTargetView[] = [];
    for (const g of result.generators) {
      for (const t of g.targets) targets.push(await this.explainTarget(g.path, t, around));
    }
    // Targets the submitted document no longer gives this cluster, still there because the latest
    // expansion is held or failed: the hold is what keeps them.
    if (heldByAppSet.length > 0) {
      const kept = await this.db.prisma.target.findMany({
        where: { appSetId: appSet.id, clusterId: row.id, name: { notIn: names } },
        orderBy: { name: 'asc' },
      });
      for (const k of kept) targets.push(keptTargetView(k, row.name, heldByAppSet));
    }
    return {
      cluster: row.name,
      appSet: appSet.name,
      at: now.toISOString(),
      matched: result.matched,
      appSetStatus: {
        status: appSet.status,
        error: appSet.error ?? null,
        heldMessage: appSet.status === 'Held' ? (pending?.message ?? null) : null,
      },
      generators: result.generators.map((g) => ({
        index: g.index,
        path: g.path,
        type: g.type,
        verdict: g.verdict,
        reasons: g.reasons,
        selectors: g.selectors,
        produced: g.produced,
        kept: g.kept,
        targets: g.targets.map((t) => t.name),
      })),
      targets,
    };
  }

  /**
   * The generators re-run for the cluster over the mirrors, and the lookup of the mirrored repository
   * a URL names (null: the hub has none).
   */
  private async generate(appSet: ApplicationSet, clusters: Cluster[], row: Cluster) {
    let parsed;
    try {
      parsed = parseApplicationSet(appSet.spec);
    } catch (e) {
      if (e instanceof GeneratorError) throw new HubError(422, 'invalid-appset', e.message, e.path);
      throw e;
    }
    const repoIds = new Map<string, string | null>();
    const repoIdOf = async (url: string) => {
      if (!repoIds.has(url)) {
        const r = await this.db.prisma.repository.findUnique({ where: { url } });
        repoIds.set(url, r && this.mirrors.mirrors.hasMirror(r.id) ? r.id : null);
      }
      return repoIds.get(url) ?? null;
    };
    // The generators read files synchronously: look up every literal repository first.
    for (const url of appSet.repoUrls) await repoIdOf(url);
    const ctx: GenerateContext = {
      clusters: clusters.map(clusterInfo),
      repository: (repoURL, revision) => this.files(repoIds.get(repoURL) ?? null, repoURL, revision),
    };
    return { result: explain(parsed, ctx, clusterInfo(row)), repoIdOf };
  }

  /** One generated target: the revision it resolves to, its stored state, its render check and its holds. */
  private async explainTarget(
    generator: string,
    t: ExplainedTarget,
    around: TargetSurroundings,
  ): Promise<ExplainTargetView> {
    const target = around.stored.get(t.name);
    const repoURL = typeof t.source['repoURL'] === 'string' ? t.source['repoURL'] : '';
    const requested =
      typeof t.source['targetRevision'] === 'string' && t.source['targetRevision'] !== ''
        ? t.source['targetRevision']
        : 'HEAD';
    const repoId = await around.repoIdOf(repoURL);
    const resolvedRevision = repoId ? this.tryResolve(repoId, requested) : null;
    const render =
      repoId && resolvedRevision ? await this.renderCheck(repoId, resolvedRevision, t.source) : null;
    const window = targetWindowStatus(
      around.windows,
      {
        application: t.name,
        namespace: t.destination.namespace ?? 'default',
        cluster: around.cluster,
        project: around.project,
      },
      around.now,
    );
    const breakGlass = around.overrides.get(t.name) ?? [];
    return {
      name: t.name,
      generator,
      params: t.params,
      source: t.source,
      destination: t.destination,
      resolvedRevision,
      stored: target ? storedView(target) : null,
      render,
      holds: [
        ...around.appSetHolds,
        ...targetHolds({
          stored: !!target,
          source: t.source,
          resolvedRevision,
          render,
          window,
          breakGlass,
          ...(target && { policy: target }),
        }),
      ],
    };
  }

  /** The render check recorded for this source at that commit, when the hub has rendered it. */
  private async renderCheck(repositoryId: string, revision: string, source: Record<string, unknown>) {
    let key: string;
    try {
      key = renderKey(
        repositoryId,
        revision,
        safeSourcePath(typeof source['path'] === 'string' ? source['path'] : ''),
        parseKustomizeOptions(source['kustomize']),
      );
    } catch {
      return null; // an unusable source: the expansion reports it
    }
    const record = await this.db.prisma.renderRecord.findUnique({ where: { key } });
    return record ? { renderer: record.renderer, deterministic: record.deterministic } : null;
  }

  private tryResolve(repositoryId: string, ref: string): string | null {
    try {
      return this.mirrors.mirrors.resolve(repositoryId, ref);
    } catch {
      return null;
    }
  }

  private files(repositoryId: string | null, repoURL: string, revision: string): RepositoryFiles {
    if (!repositoryId) {
      throw new GeneratorError(
        'repository',
        `repository ${repoURL} has not been fetched by the hub; explain reads mirrors and fetches nothing`,
      );
    }
    let sha: string;
    try {
      sha = this.mirrors.mirrors.resolve(repositoryId, revision);
    } catch (e) {
      throw new GeneratorError('repository', `${repoURL}: ${e instanceof Error ? e.message : String(e)}`);
    }
    const mirrors = this.mirrors.mirrors;
    return {
      listFiles: () => mirrors.listFiles(repositoryId, sha),
      readFile: (path) => mirrors.readFile(repositoryId, sha, path),
    };
  }
}

function clusterInfo(c: {
  name: string;
  server: string;
  labels: unknown;
  annotations: unknown;
}): ClusterInfo {
  return { name: c.name, server: c.server, labels: asRecord(c.labels), annotations: asRecord(c.annotations) };
}

/** What every target of one explanation is judged against. */
interface TargetSurroundings {
  cluster: string;
  project: string;
  now: Date;
  appSetHolds: ExplainHoldView[];
  /** The appset's stored targets among those generated, by name. */
  stored: Map<string, Target>;
  repoIdOf: (url: string) => Promise<string | null>;
  windows: NamedSyncWindow[];
  overrides: Map<string, BreakGlassOverride[]>;
}

function storedView(target: Target): NonNullable<ExplainTargetView['stored']> {
  return {
    desiredRevision: target.desiredRevision,
    bundleDigest: target.bundleDigest,
    lastSyncedRevision: target.lastSyncedRevision,
    lastSyncedDigest: target.lastSyncedDigest,
    health: target.health,
  };
}

/** A target the generators no longer give the cluster, kept by the appset's holds. */
function keptTargetView(k: Target, clusterName: string, holds: ExplainHoldView[]): ExplainTargetView {
  return {
    name: k.name,
    generator: '(none: kept from the last applied expansion)',
    params: (k.params ?? {}) as Record<string, unknown>,
    source: { repoURL: k.repoUrl, path: k.sourcePath, targetRevision: k.targetRevision },
    destination: { name: clusterName, namespace: k.namespace },
    resolvedRevision: null,
    stored: storedView(k),
    render: null,
    holds,
  };
}
