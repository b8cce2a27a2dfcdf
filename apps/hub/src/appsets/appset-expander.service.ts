import { Injectable, Logger } from '@nestjs/common';
import {
  generate,
  GeneratorError,
  parseApplicationSet,
  type ClusterInfo,
  type GeneratedTarget,
  type RepositoryFiles,
} from '@flotilla/generators';
import { Database } from '../db/database.js';
import { asRecord, toJson } from '../common/json.js';
import { AuditLog } from '../audit/audit.service.js';
import { GitMirrorError } from '../git/git-mirror.js';
import { GitMirrorsService } from '../git/git-mirrors.service.js';
import { ClusterWakeups } from '../queues/cluster-wakeups.service.js';
import { RenderError, RenderService } from '../render/render.service.js';
import { RepositoriesService } from '../repositories/repositories.service.js';
import { canonicalJson } from '@flotilla/manifests';
import { literalRepoRefs } from './appset-document.js';
import { syncPolicyOf } from './sync-policy.js';
import { Prisma, type Cluster, type Repository } from '../generated/prisma/client.js';

/** Why an expansion could not finish; stored on the appset. Nothing about its targets changed. */
export class ExpansionError extends Error {
  override readonly name = 'ExpansionError';
  constructor(
    readonly code: string,
    message: string,
    readonly path?: string,
  ) {
    super(message);
  }
}

interface DesiredTarget {
  name: string;
  clusterId: string;
  namespace: string;
  repoUrl: string;
  sourcePath: string;
  targetRevision: string;
  desiredRevision: string;
  bundleDigest: string;
  syncPolicy: unknown;
  params: unknown;
}

export interface ExpansionOutcome {
  status: 'Ready' | 'Error' | 'Gone';
  created: number;
  updated: number;
  deleted: number;
  error?: { code: string; message: string; path?: string };
}

/**
 * appset → targets: runs the generators against the inventory and Git, renders every target's
 * bundle, then applies only the differences to the targets in one transaction. Any error (generator,
 * repository, revision, manifests, unknown cluster) is recorded on the appset and changes no target.
 */
@Injectable()
export class AppSetExpander {
  private readonly logger = new Logger(AppSetExpander.name);
  /** Expansions of one appset never overlap in this process (two jobs with different inputs may be queued). */
  private readonly running = new Map<string, Promise<unknown>>();

  constructor(
    private readonly db: Database,
    private readonly mirrors: GitMirrorsService,
    private readonly repos: RepositoriesService,
    private readonly render: RenderService,
    private readonly audit: AuditLog,
    private readonly wakeups: ClusterWakeups,
  ) {}

  async expand(appSetId: string): Promise<ExpansionOutcome> {
    const previous = this.running.get(appSetId) ?? Promise.resolve();
    const run = previous.catch(() => undefined).then(() => this.expandNow(appSetId));
    this.running.set(appSetId, run);
    try {
      return await run;
    } finally {
      if (this.running.get(appSetId) === run) this.running.delete(appSetId);
    }
  }

  private async expandNow(appSetId: string): Promise<ExpansionOutcome> {
    const appSet = await this.db.prisma.applicationSet.findUnique({ where: { id: appSetId } });
    if (!appSet) return { status: 'Gone', created: 0, updated: 0, deleted: 0 };
    let desired: DesiredTarget[];
    let repoUrls: string[];
    try {
      ({ desired, repoUrls } = await this.desiredTargets(appSet.name, appSet.spec));
    } catch (e) {
      if (!(e instanceof ExpansionError)) throw e;
      const error = { code: e.code, message: e.message, ...(e.path !== undefined && { path: e.path }) };
      const previous = JSON.stringify(appSet.error);
      await this.db.prisma.applicationSet.update({
        where: { id: appSet.id },
        data: { status: 'Error', error: toJson(error), lastExpandedAt: new Date() },
      });
      if (appSet.status !== 'Error' || previous !== JSON.stringify(error)) {
        await this.audit.record({
          actor: 'hub',
          action: 'appset.expand-failed',
          scope: `appset:${appSet.name}`,
          details: error,
        });
      }
      this.logger.warn(`appset ${appSet.name}: ${e.code}: ${e.message}`);
      return { status: 'Error', created: 0, updated: 0, deleted: 0, error };
    }
    return this.apply(appSet.id, appSet.name, desired, repoUrls);
  }

  private async desiredTargets(
    appSetName: string,
    spec: unknown,
  ): Promise<{ desired: DesiredTarget[]; repoUrls: string[] }> {
    let parsed;
    try {
      parsed = parseApplicationSet(spec);
    } catch (e) {
      if (e instanceof GeneratorError)
        throw new ExpansionError(e.code.toLowerCase().replaceAll('_', '-'), e.message, e.path);
      throw e;
    }
    const clusters = await this.db.prisma.cluster.findMany({ orderBy: { name: 'asc' } });
    const repoByUrl = new Map<string, Repository>();
    // Repositories named literally (git generators, a fixed template source) are fetched up front,
    // because the generators read files synchronously.
    for (const url of literalRepoRefs(spec).keys())
      repoByUrl.set(url, await this.readyRepository(url, appSetName));

    let generated: GeneratedTarget[];
    try {
      generated = generate(parsed, {
        clusters: clusters.map((c) => clusterInfo(c)),
        repository: (repoURL, revision) => this.files(repoByUrl, repoURL, revision),
      }).targets;
    } catch (e) {
      if (e instanceof GeneratorError)
        throw new ExpansionError(e.code.toLowerCase().replaceAll('_', '-'), e.message, e.path);
      if (e instanceof ExpansionError) throw e;
      throw e;
    }

    const seen = new Map<string, number>();
    const desired: DesiredTarget[] = [];
    const renders = new Map<string, Promise<string>>();
    for (const [i, t] of generated.entries()) {
      const at = `targets[${i}] (${t.name})`;
      const prev = seen.get(t.name);
      if (prev !== undefined) {
        throw new ExpansionError(
          'duplicate-target',
          `two targets are named "${t.name}" (parameter sets ${prev} and ${i}); make the template's metadata.name unique`,
          `${at}.metadata.name`,
        );
      }
      seen.set(t.name, i);
      const cluster = this.clusterOf(t, clusters, at);
      // Templates may use Argo CD's multi-source `sources`, which Flotilla does not render yet.
      const source = t.application.spec.source as typeof t.application.spec.source | undefined;
      if (!source) {
        throw new ExpansionError(
          'invalid-target',
          'the rendered template has no spec.source (multi-source `sources` is not supported yet)',
          `${at}.spec.source`,
        );
      }
      if (!source.repoURL)
        throw new ExpansionError(
          'invalid-target',
          'spec.source.repoURL is empty',
          `${at}.spec.source.repoURL`,
        );
      let repo = repoByUrl.get(source.repoURL);
      if (!repo) {
        repo = await this.readyRepository(source.repoURL, appSetName);
        repoByUrl.set(source.repoURL, repo);
      }
      const targetRevision = source.targetRevision || 'HEAD';
      const sha = this.resolve(repo, targetRevision, `${at}.spec.source.targetRevision`);
      const path = source.path ?? '';
      const key = `${repo.id}\0${sha}\0${path}`;
      let digest = renders.get(key);
      if (!digest) {
        digest = this.renderOne(repo, sha, path, `${at}.spec.source.path`);
        renders.set(key, digest);
      }
      desired.push({
        name: t.name,
        clusterId: cluster.id,
        namespace: t.application.spec.destination.namespace || 'default',
        repoUrl: repo.url,
        sourcePath: path,
        targetRevision,
        desiredRevision: sha,
        bundleDigest: await digest,
        syncPolicy: syncPolicyOf(t.application.spec.syncPolicy),
        params: t.params,
      });
    }
    return { desired, repoUrls: [...repoByUrl.keys()].sort() };
  }

  private async renderOne(repo: Repository, sha: string, path: string, at: string): Promise<string> {
    try {
      return await this.render.render({ repositoryId: repo.id, repoUrl: repo.url, revision: sha, path });
    } catch (e) {
      if (e instanceof RenderError) throw new ExpansionError(e.code, e.message, `${at}: ${e.path}`);
      throw e;
    }
  }

  /** A registered repository with a usable mirror; fetched now if it never was. */
  private async readyRepository(url: string, appSetName: string): Promise<Repository> {
    let repo = await this.repos.register(url, `appset:${appSetName}`);
    if (!this.mirrors.mirrors.hasMirror(repo.id) || repo.lastFetchedAt === null) {
      const r = await this.repos.syncNow(repo.id);
      repo = await this.db.prisma.repository.findUniqueOrThrow({ where: { id: repo.id } });
      if (!r.ok && repo.lastFetchedAt === null) {
        throw new ExpansionError(
          'repository-unreachable',
          r.error ?? `cannot fetch ${url}`,
          `repoURL ${url}`,
        );
      }
    }
    return repo;
  }

  private files(repoByUrl: Map<string, Repository>, repoURL: string, revision: string): RepositoryFiles {
    const repo = repoByUrl.get(repoURL);
    if (!repo) {
      throw new ExpansionError(
        'repository-unknown',
        `repository ${repoURL} is read by a generator but was not fetched; write its URL literally`,
        `repoURL ${repoURL}`,
      );
    }
    const sha = this.resolve(repo, revision, `git generator ${repoURL}`);
    const mirrors = this.mirrors.mirrors;
    return {
      listFiles: () => mirrors.listFiles(repo.id, sha),
      readFile: (path) => mirrors.readFile(repo.id, sha, path),
    };
  }

  private resolve(repo: Repository, ref: string, at: string): string {
    try {
      return this.mirrors.mirrors.resolve(repo.id, ref);
    } catch (e) {
      if (e instanceof GitMirrorError)
        throw new ExpansionError('unknown-revision', `${repo.url}: ${e.message}`, at);
      throw e;
    }
  }

  private clusterOf(t: GeneratedTarget, clusters: Cluster[], at: string): Cluster {
    const d = t.application.spec.destination;
    if (d.name) {
      const c = clusters.find((x) => x.name === d.name);
      if (!c)
        throw new ExpansionError(
          'unknown-cluster',
          `destination cluster "${d.name}" is not in the inventory; POST /api/v1/clusters first`,
          `${at}.spec.destination.name`,
        );
      return c;
    }
    if (d.server) {
      const c = clusters.find((x) => x.server !== '' && x.server === d.server);
      if (!c)
        throw new ExpansionError(
          'unknown-cluster',
          `no cluster in the inventory has server ${d.server}`,
          `${at}.spec.destination.server`,
        );
      return c;
    }
    throw new ExpansionError(
      'invalid-target',
      'spec.destination needs a cluster name or server',
      `${at}.spec.destination`,
    );
  }

  private async apply(
    appSetId: string,
    appSetName: string,
    desired: DesiredTarget[],
    repoUrls: string[],
  ): Promise<ExpansionOutcome> {
    const names = desired.map((d) => d.name);
    const clash = await this.db.prisma.target.findFirst({
      where: { name: { in: names }, appSetId: { not: appSetId } },
      include: { appSet: { select: { name: true } } },
    });
    if (clash) {
      const e = new ExpansionError(
        'target-name-conflict',
        `target "${clash.name}" already belongs to appset "${clash.appSet.name}"`,
        'spec.template.metadata.name',
      );
      await this.db.prisma.applicationSet.update({
        where: { id: appSetId },
        data: {
          status: 'Error',
          error: toJson({ code: e.code, message: e.message, path: e.path }),
          lastExpandedAt: new Date(),
        },
      });
      return {
        status: 'Error',
        created: 0,
        updated: 0,
        deleted: 0,
        error: { code: e.code, message: e.message, path: e.path ?? '' },
      };
    }
    const touched = new Set<string>();
    const counts = await this.db.prisma.$transaction(async (tx) => {
      const existing = await tx.target.findMany({ where: { appSetId } });
      const byName = new Map(existing.map((t) => [t.name, t]));
      let created = 0;
      let updated = 0;
      for (const d of desired) {
        const cur = byName.get(d.name);
        const data = {
          clusterId: d.clusterId,
          namespace: d.namespace,
          repoUrl: d.repoUrl,
          sourcePath: d.sourcePath,
          targetRevision: d.targetRevision,
          desiredRevision: d.desiredRevision,
          bundleDigest: d.bundleDigest,
          syncPolicy: toJson(d.syncPolicy),
          params: toJson(d.params),
        };
        if (!cur) {
          await tx.target.create({ data: { name: d.name, appSetId, ...data } });
          touched.add(d.clusterId);
          created++;
          continue;
        }
        const same =
          cur.clusterId === d.clusterId &&
          cur.namespace === d.namespace &&
          cur.repoUrl === d.repoUrl &&
          cur.sourcePath === d.sourcePath &&
          cur.targetRevision === d.targetRevision &&
          cur.desiredRevision === d.desiredRevision &&
          cur.bundleDigest === d.bundleDigest &&
          canonicalJson(cur.syncPolicy) === canonicalJson(d.syncPolicy) &&
          canonicalJson(cur.params) === canonicalJson(d.params);
        if (same) continue;
        await tx.target.update({ where: { id: cur.id }, data });
        touched.add(cur.clusterId).add(d.clusterId);
        updated++;
      }
      const keep = new Set(names);
      const gone = existing.filter((t) => !keep.has(t.name));
      if (gone.length > 0) await tx.target.deleteMany({ where: { id: { in: gone.map((t) => t.id) } } });
      for (const t of gone) touched.add(t.clusterId);
      await tx.applicationSet.update({
        where: { id: appSetId },
        data: { status: 'Ready', error: Prisma.DbNull, repoUrls, lastExpandedAt: new Date() },
      });
      if (created + updated + gone.length > 0) {
        await this.audit.record(
          {
            actor: 'hub',
            action: 'appset.expanded',
            scope: `appset:${appSetName}`,
            details: {
              created,
              updated,
              deleted: gone.length,
              targets: desired.map((d) => ({
                name: d.name,
                revision: d.desiredRevision,
                bundleDigest: d.bundleDigest,
              })),
            },
          },
          tx,
        );
      }
      return { created, updated, deleted: gone.length };
    });
    await this.wakeups.notify(touched);
    return { status: 'Ready', ...counts };
  }
}

function clusterInfo(c: Cluster): ClusterInfo {
  return { name: c.name, server: c.server, labels: asRecord(c.labels), annotations: asRecord(c.annotations) };
}
