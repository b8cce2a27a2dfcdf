import { Injectable } from '@nestjs/common';
import type { ExplainHoldView, ExplainTargetView, ExplainView } from '@flotilla/contract';
import {
  explain,
  GeneratorError,
  parseApplicationSet,
  type ClusterInfo,
  type GenerateContext,
  type RepositoryFiles,
} from '@flotilla/generators';
import { safeSourcePath, parseKustomizeOptions } from '@flotilla/manifests';
import { targetWindowStatus } from '@flotilla/windows';
import { BreakGlassService } from '../break-glass/break-glass.service.js';
import { asRecord, storedErrorText } from '../common/json.js';
import { HubError } from '../common/hub-error.js';
import { Database } from '../db/database.js';
import { GitMirrorsService } from '../sources/git/git-mirrors.service.js';
import { renderKey } from '../render/render-keys.js';
import { WindowsService } from '../release/windows/windows.service.js';

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
    const result = explain(parsed, ctx, clusterInfo(row));

    const pending = appSet.pendingExpansion as { message?: string } | null;
    const appSetHolds: ExplainHoldView[] = [];
    if (appSet.status === 'Held') {
      appSetHolds.push({
        kind: 'deletion-guard',
        message:
          pending?.message ??
          'the deletion guard holds the latest expansion: the targets stay as they were until it is confirmed',
      });
    }
    if (appSet.status === 'Error') {
      appSetHolds.push({
        kind: 'appset-error',
        message: `the latest expansion failed, so targets keep their previous state: ${storedErrorText(appSet.error)}`,
      });
    }

    const names = result.generators.flatMap((g) => g.targets.map((t) => t.name));
    const stored = new Map(
      (await this.db.prisma.target.findMany({ where: { appSetId: appSet.id, name: { in: names } } })).map(
        (t) => [t.name, t],
      ),
    );
    const named = await this.windows.named();
    const overrides = await this.breakGlass.activeFor(
      names.map((name) => ({ name, clusterName: row.name, appSetName: appSet.name })),
      now,
    );

    const targets: ExplainTargetView[] = [];
    for (const g of result.generators) {
      for (const t of g.targets) {
        const target = stored.get(t.name);
        const repoURL = typeof t.source['repoURL'] === 'string' ? t.source['repoURL'] : '';
        const requested =
          typeof t.source['targetRevision'] === 'string' && t.source['targetRevision'] !== ''
            ? t.source['targetRevision']
            : 'HEAD';
        const repoId = await repoIdOf(repoURL);
        const resolvedRevision = repoId ? this.tryResolve(repoId, requested) : null;
        const holds: ExplainHoldView[] = [...appSetHolds];
        if (!target) {
          holds.push({
            kind: 'not-expanded',
            message: 'no target is stored for it yet: the appset has not been expanded since it matched',
          });
        }
        const render =
          repoId && resolvedRevision ? await this.renderCheck(repoId, resolvedRevision, t.source) : null;
        if (render && !render.deterministic) {
          holds.push({
            kind: 'render',
            message: `rendering ${typeof t.source['path'] === 'string' ? t.source['path'] || '.' : '.'} at ${resolvedRevision?.slice(0, 12)} is not deterministic; the render is refused`,
          });
        }
        const status = targetWindowStatus(
          named,
          {
            application: t.name,
            namespace: t.destination.namespace ?? 'default',
            cluster: row.name,
            project: appSet.project,
          },
          now,
        );
        const breakGlass = overrides.get(t.name) ?? [];
        const bypass = breakGlass.some((b) => b.allowSyncOutsideWindows);
        if (!status.canSync && !bypass) {
          holds.push({
            kind: 'sync-window',
            message: `automatic syncs are closed${status.active.length > 0 ? ` by ${status.active.join(', ')}` : ' (no allow window is active)'}; next open ${status.nextOpen?.toISOString() ?? 'not within the horizon'}`,
          });
        }
        for (const b of breakGlass) {
          holds.push({
            kind: 'break-glass',
            message: `break-glass ${b.id} until ${b.expiresAt}: ${b.reason}${b.allowSyncOutsideWindows ? ' (syncs outside windows allowed)' : ''}${b.pauseSelfHeal ? ' (self-heal paused)' : ''}`,
          });
        }
        targets.push({
          name: t.name,
          generator: g.path,
          params: t.params,
          source: t.source,
          destination: t.destination,
          resolvedRevision,
          stored: target
            ? {
                desiredRevision: target.desiredRevision,
                bundleDigest: target.bundleDigest,
                lastSyncedRevision: target.lastSyncedRevision,
                lastSyncedDigest: target.lastSyncedDigest,
                health: target.health,
              }
            : null,
          render,
          holds,
        });
      }
    }
    // Targets the submitted document no longer gives this cluster, still there because the latest
    // expansion is held or failed: the hold is what keeps them.
    if (appSetHolds.length > 0) {
      const kept = await this.db.prisma.target.findMany({
        where: { appSetId: appSet.id, clusterId: row.id, name: { notIn: names } },
        orderBy: { name: 'asc' },
      });
      for (const k of kept) {
        targets.push({
          name: k.name,
          generator: '(none: kept from the last applied expansion)',
          params: (k.params ?? {}) as Record<string, unknown>,
          source: { repoURL: k.repoUrl, path: k.sourcePath, targetRevision: k.targetRevision },
          destination: { name: row.name, namespace: k.namespace },
          resolvedRevision: null,
          stored: {
            desiredRevision: k.desiredRevision,
            bundleDigest: k.bundleDigest,
            lastSyncedRevision: k.lastSyncedRevision,
            lastSyncedDigest: k.lastSyncedDigest,
            health: k.health,
          },
          render: null,
          holds: appSetHolds,
        });
      }
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
        'REPOSITORY',
        `repository ${repoURL} has not been fetched by the hub; explain reads mirrors and fetches nothing`,
      );
    }
    let sha: string;
    try {
      sha = this.mirrors.mirrors.resolve(repositoryId, revision);
    } catch (e) {
      throw new GeneratorError('REPOSITORY', `${repoURL}: ${e instanceof Error ? e.message : String(e)}`);
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
