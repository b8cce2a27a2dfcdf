import { createHash } from 'node:crypto';
import { Inject, Injectable, Logger } from '@nestjs/common';
import {
  generate,
  GeneratorError,
  literalRepoRefs,
  parseApplicationSet,
  type ClusterInfo,
  type GeneratedTarget,
  type RepositoryFiles,
} from '@flotilla/generators';
import { Database } from '../db/database.js';
import { asRecord, toJson } from '../common/json.js';
import { HubError } from '../common/hub-error.js';
import { HUB_CONFIG, type HubConfig } from '../config/hub-config.js';
import { AuditLog } from '../audit/audit.service.js';
import { GitMirrorError } from '../sources/git/git-mirror.js';
import { GitMirrorsService } from '../sources/git/git-mirrors.service.js';
import { ClusterWakeups } from '../wakeups/cluster-wakeups.service.js';
import { HubMetrics } from '../metrics/hub-metrics.service.js';
import { ReleaseAfterExpansion } from './release-after-expansion.js';
import {
  pathOf,
  RenderError,
  RenderService,
  sourcesRevision,
  type RenderApplication,
  type ResolvedSource,
} from '../render/render.service.js';
import { withoutCredentials } from '../sources/repositories/repository-url.js';
import { RepositoriesService } from '../sources/repositories/repositories.service.js';
import {
  canonicalJson,
  helmApplicationInputs,
  ManifestError,
  parseApplicationSources,
  parseHelmOptions,
  type ApplicationSource,
  type Capabilities,
  type ChartVersion,
  type HelmOptions,
} from '@flotilla/manifests';
import type { ExpansionPreviewView, PendingExpansionView, TargetSourceView } from '@flotilla/contract';
import {
  chartRepositoryRefusal,
  multiSourceRefusal,
  unrenderedSourceField,
} from './appset-document.js';
import { ExpansionGitReads, type ResolvedRef, type SharedRefs } from './expansion-git-reads.js';
import { findNameClash, writePlan } from './expansion-writes.js';
import { requestExpansionDeletions } from './target-deletions.service.js';
import { SyncSettingsError, targetSyncSettingsOf } from './sync-policy.js';
import { ProjectGate, ProjectPolicy } from '../projects/project-policy.service.js';
import {
  deletionGuardLimit,
  evaluateDeletionGuard,
  nextGuardBaseline,
  deletesResourcesOnDeletion,
  preservesResourcesOnDeletion,
  type GuardInput,
} from './deletion-guard.js';
import { Prisma, type Cluster, type Repository, type Target } from '../generated/prisma/client.js';

/**
 * A computed expansion: its targets, the repositories it read, and what it was computed from (refs,
 * the capabilities of the clusters whose charts it rendered) to tell whether that moved meanwhile.
 */
interface Computed {
  desired: DesiredTarget[];
  repoUrls: string[];
  refs: ResolvedRef[];
  /** Cluster id → the capabilities its charts were rendered with (`capabilitiesKey`). */
  capabilities: Map<string, string>;
}

/** Why an expansion could not finish; stored on the appset. Nothing about its targets changed. */
export class ExpansionError extends Error {
  override readonly name = 'ExpansionError';
  /** The branch and tag heads the failed expansion had resolved, to tell a stale failure from a real one. */
  refs: ResolvedRef[] = [];
  constructor(
    readonly code: string,
    message: string,
    readonly path?: string,
  ) {
    super(message);
  }
}

export interface DesiredTarget {
  name: string;
  clusterId: string;
  clusterName: string;
  namespace: string;
  repoUrl: string;
  sourcePath: string;
  targetRevision: string;
  desiredRevision: string;
  /** A multi-source target's sources with what each resolved to; null for one source. */
  sources: TargetSourceView[] | null;
  bundleDigest: string;
  syncPolicy: unknown;
  params: unknown;
}

export interface ExpansionOutcome {
  status: 'Ready' | 'Error' | 'Gone' | 'Held';
  created: number;
  updated: number;
  deleted: number;
  error?: { code: string; message: string; path?: string };
  held?: PendingExpansion;
}

/** An expansion the deletion guard holds, as stored on the appset (`pendingExpansion`). */
export type PendingExpansion = PendingExpansionView;

/** What an expansion would do to the stored targets. */
export interface ExpansionPlan {
  create: DesiredTarget[];
  update: { current: Target; desired: DesiredTarget }[];
  /**
   * Same name, another cluster: the old row goes and a new one (new id, no status) takes its place.
   * A target's identity includes its cluster, so nothing another cluster reported — health, last
   * sync, release, pin — is shown for one that never synced it.
   */
  move: { current: Target; desired: DesiredTarget }[];
  delete: Target[];
}

/** A person's go-ahead for a held expansion. */
export interface ExpansionConfirmation {
  inputsHash: string;
  reason: string;
  actor: string;
}

/** The dry run: what an expansion would compute and change, changing nothing. */
/** The generators' output and what an expansion would change, as the API returns it. */
export type ExpansionPreview = ExpansionPreviewView;

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
    private readonly metrics: HubMetrics,
    private readonly release: ReleaseAfterExpansion,
    private readonly projects: ProjectPolicy,
    @Inject(HUB_CONFIG) private readonly config: HubConfig,
  ) {}

  /** The refs every replica shares, and this replica's mirror brought up to them when it lags. */
  private readonly sharedRefs: SharedRefs = {
    load: async (repositoryId) => {
      const rows = await this.db.prisma.repositoryRef.findMany({ where: { repositoryId } });
      return new Map(rows.map((r) => [r.ref, r.sha]));
    },
    fetchMirror: (repositoryId) => this.repos.fetchMirror(repositoryId),
  };

  async expand(appSetId: string): Promise<ExpansionOutcome> {
    return this.serialised(appSetId, async () => {
      // A result computed from inputs that moved meanwhile (a newer commit recorded by another
      // replica, a new spec) is dropped and computed again from the new inputs.
      for (let attempt = 1; attempt <= STALE_RETRIES; attempt++) {
        const outcome = await this.expandNow(appSetId);
        if (outcome !== STALE) return outcome;
        this.logger.log(`appset ${appSetId}: inputs moved during expansion ${attempt}; expanding again`);
      }
      // Still moving: BullMQ retries the job later (with back-off) rather than spin here.
      throw new Error(`appset ${appSetId}: inputs kept moving during ${STALE_RETRIES} expansions`);
    });
  }

  /**
   * Applies the expansion the guard holds, as computed — only if a fresh computation still gives the
   * same target set (else 409: the inputs moved, look at the preview again).
   */
  async confirm(appSetName: string, confirmation: ExpansionConfirmation): Promise<ExpansionOutcome> {
    const found = await this.db.prisma.applicationSet.findUnique({ where: { name: appSetName } });
    if (!found) throw HubError.notFound('appset', appSetName);
    return this.serialised(found.id, async () => {
      const appSet = await this.db.prisma.applicationSet.findUniqueOrThrow({ where: { id: found.id } });
      const pending = appSet.pendingExpansion as PendingExpansion | null;
      if (!pending) {
        throw new HubError(
          409,
          'nothing-held',
          `appset "${appSetName}" has no expansion waiting for confirmation`,
        );
      }
      if (pending.inputsHash !== confirmation.inputsHash) {
        throw new HubError(
          409,
          'hold-changed',
          `the held expansion is ${pending.inputsHash}, not ${confirmation.inputsHash}; GET /api/v1/appsets/${appSetName} and confirm what it shows`,
          'inputsHash',
        );
      }
      let computed;
      try {
        computed = await this.desiredTargets(appSet.name, appSet.spec, true);
      } catch (e) {
        if (e instanceof ExpansionError) throw new HubError(409, e.code, e.message, e.path);
        throw e;
      }
      if (targetSetHash(computed.desired) !== pending.inputsHash) {
        throw new HubError(
          409,
          'inputs-changed',
          `the inputs changed since the expansion was held; GET /api/v1/appsets/${appSetName}/preview to re-check, then confirm the new inputsHash`,
          'inputsHash',
        );
      }
      const outcome = await this.apply(appSet.id, appSet.name, appSet.spec, computed, confirmation);
      if (outcome === STALE) {
        throw new HubError(
          409,
          'inputs-changed',
          `the inputs changed while the confirmed expansion was written; GET /api/v1/appsets/${appSetName}/preview to re-check, then confirm the new inputsHash`,
          'inputsHash',
        );
      }
      return outcome;
    });
  }

  /** Computes an expansion of `document` and what it would change for the appset of that name; writes nothing. */
  async preview(appSetName: string, document: unknown): Promise<ExpansionPreview> {
    let desired: DesiredTarget[];
    try {
      ({ desired } = await this.desiredTargets(appSetName, document, false));
    } catch (e) {
      if (e instanceof ExpansionError) throw new HubError(422, e.code, e.message, e.path);
      throw e;
    }
    const existing = await this.db.prisma.target.findMany({ where: { appSet: { name: appSetName } } });
    const stored = await this.db.prisma.applicationSet.findUnique({
      where: { name: appSetName },
      select: { guardBaseline: true },
    });
    const plan = planExpansion(existing, desired);
    const limit = deletionGuardLimit(document, this.config.appsets.deletionGuardPercent);
    return {
      inputsHash: targetSetHash(desired),
      targets: desired.map((d) => ({
        name: d.name,
        cluster: d.clusterName,
        namespace: d.namespace,
        repoUrl: d.repoUrl,
        path: d.sourcePath,
        targetRevision: d.targetRevision,
        desiredRevision: d.desiredRevision,
        sources: d.sources,
        bundleDigest: d.bundleDigest,
      })),
      create: plan.create.map((d) => d.name).sort(),
      update: plan.update.map((u) => u.desired.name).sort(),
      move: plan.move.map((m) => m.desired.name).sort(),
      delete: plan.delete.map((t) => t.name).sort(),
      guard: evaluateDeletionGuard(
        guardInput(existing.length, plan, desired.length, stored?.guardBaseline ?? null),
        limit,
      ),
    };
  }

  private async serialised<T>(appSetId: string, work: () => Promise<T>): Promise<T> {
    const previous = this.running.get(appSetId) ?? Promise.resolve();
    const run = previous.catch(() => undefined).then(work);
    this.running.set(appSetId, run);
    try {
      return await run;
    } finally {
      if (this.running.get(appSetId) === run) this.running.delete(appSetId);
    }
  }

  private async expandNow(appSetId: string): Promise<ExpansionOutcome | Stale> {
    const appSet = await this.db.prisma.applicationSet.findUnique({ where: { id: appSetId } });
    // Deleted, or being deleted with its objects (its targets wait for their agents): nothing to expand.
    if (!appSet || appSet.status === 'Deleting')
      return { status: 'Gone', created: 0, updated: 0, deleted: 0 };
    let computed: Computed;
    try {
      computed = await this.desiredTargets(appSet.name, appSet.spec, true);
    } catch (e) {
      if (!(e instanceof ExpansionError)) throw e;
      return this.recordFailure(appSet, e);
    }
    return this.apply(appSet.id, appSet.name, appSet.spec, computed);
  }

  /**
   * Records a failed expansion, under the appset's row lock like a successful one. A failure computed
   * from older inputs than what is stored now — a spec replaced, a ref another replica recorded at a
   * newer commit, another expansion written since this one began — is dropped and computed again
   * instead: a broken commit that was already fixed must not turn a Ready appset to Error.
   */
  private async recordFailure(
    started: { id: string; name: string; spec: unknown; lastExpandedAt: Date | null },
    e: ExpansionError,
  ): Promise<ExpansionOutcome | Stale> {
    const error = { code: e.code, message: e.message, ...(e.path !== undefined && { path: e.path }) };
    const outcome = await this.db.prisma.$transaction(async (tx): Promise<ExpansionOutcome | Stale> => {
      await tx.$executeRaw`SELECT 1 FROM "ApplicationSet" WHERE "id" = ${started.id} FOR UPDATE`;
      const appSet = await tx.applicationSet.findUnique({ where: { id: started.id } });
      if (!appSet) return { status: 'Gone', created: 0, updated: 0, deleted: 0 };
      if (
        canonicalJson(appSet.spec) !== canonicalJson(started.spec) ||
        appSet.lastExpandedAt?.getTime() !== started.lastExpandedAt?.getTime() ||
        (await refsMoved(tx, e.refs))
      )
        return STALE;
      await tx.applicationSet.update({
        where: { id: appSet.id },
        data: { status: 'Error', error: toJson(error), lastExpandedAt: new Date() },
      });
      if (appSet.status !== 'Error' || JSON.stringify(appSet.error) !== JSON.stringify(error)) {
        await this.audit.record(
          { actor: 'hub', action: 'appset.expand-failed', scope: `appset:${appSet.name}`, details: error },
          tx,
        );
      }
      return { status: 'Error', created: 0, updated: 0, deleted: 0, error };
    });
    if (outcome !== STALE) this.logger.warn(`appset ${started.name}: ${e.code}: ${e.message}`);
    return outcome;
  }

  /** `register` false (the preview): use only repositories already fetched, register and fetch nothing. */
  private async desiredTargets(appSetName: string, spec: unknown, register: boolean): Promise<Computed> {
    let parsed;
    try {
      parsed = parseApplicationSet(spec);
    } catch (e) {
      if (e instanceof GeneratorError)
        throw new ExpansionError(e.code.toLowerCase().replaceAll('_', '-'), e.message, e.path);
      throw e;
    }
    const git = new ExpansionGitReads(this.mirrors.mirrors, this.sharedRefs);
    try {
      return await this.generateDesired(appSetName, spec, parsed, git, register);
    } catch (e) {
      if (e instanceof ExpansionError) e.refs = git.resolvedRefs();
      throw e;
    }
  }

  private async generateDesired(
    appSetName: string,
    spec: unknown,
    parsed: ReturnType<typeof parseApplicationSet>,
    git: ExpansionGitReads,
    register: boolean,
  ): Promise<Computed> {
    const clusters = await this.db.prisma.cluster.findMany({ orderBy: { name: 'asc' } });
    const clusterIndex = indexClusters(clusters);
    const repoByUrl = new Map<string, Repository>();
    // Repositories named literally (git generators, a fixed template source) are fetched up front,
    // because the generators read files synchronously.
    // The project is checked before anything is fetched: a repository outside it is never read.
    const gate = await this.projects.gateFor(spec);
    if (!(gate instanceof ProjectGate)) throw new ExpansionError(gate.code, gate.message, gate.path);
    const refused = gate.checkLiteralRepositories(spec);
    if (refused) throw new ExpansionError(refused.code, refused.message, refused.path);
    for (const url of literalRepoRefs(spec).keys())
      await this.preparedRepository(url, { appSetName, register, git, repoByUrl });

    let generated: GeneratedTarget[];
    try {
      generated = generate(parsed, {
        clusters: clusters.map((c) => clusterInfo(c)),
        repository: (repoURL, revision) => this.files(git, repoByUrl, repoURL, revision),
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
    const charts = new Map<string, Promise<boolean>>();
    const chartCapabilities = new Map<string, string>();
    const chartVersions = new Map<string, Promise<ChartVersion>>();
    // What needs a target's bundle waits until every render has started, so renders overlap.
    const awaitingBundle: (() => Promise<void>)[] = [];
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
      const cluster = this.clusterOf(t, clusterIndex, at);
      const namespace = t.application.spec.destination.namespace || 'default';
      const projectCluster = { name: cluster.name, labels: asRecord(cluster.labels) };
      // A chart renders with its cluster's .Capabilities once the agent reported them.
      const capabilities = capabilitiesOf(cluster, this.render.defaultCapabilities());
      // Only a chart reads them: a plain fleet's expansions never wait on capability reports.
      const readsCapabilities = () => chartCapabilities.set(cluster.id, capabilitiesKey(cluster));
      const syncSettings = syncSettingsOf(t.application.spec, t.name);
      const finish = (
        rendered: Promise<string>,
        placed: Pick<
          DesiredTarget,
          'repoUrl' | 'sourcePath' | 'targetRevision' | 'desiredRevision' | 'sources'
        >,
      ) =>
        awaitingBundle.push(async () => {
          const bundleDigest = await rendered;
          const refusedObject = await gate.checkBundle(at, bundleDigest, projectCluster, namespace);
          if (refusedObject)
            throw new ExpansionError(refusedObject.code, refusedObject.message, refusedObject.path);
          desired.push({
            name: t.name,
            clusterId: cluster.id,
            clusterName: cluster.name,
            namespace,
            ...placed,
            bundleDigest,
            syncPolicy: syncSettings,
            params: t.params,
          });
        });
      const multi = (t.application.spec as Record<string, unknown>)['sources'];
      if (multi !== undefined && multi !== null) {
        const placed = await this.placeSources(t, at, {
          appSetName,
          register,
          git,
          repoByUrl,
          chartVersions,
          renders,
          gate,
          projectCluster,
          namespace,
          capabilities,
        });
        readsCapabilities();
        finish(placed.rendered, placed.placed);
        continue;
      }
      const source = t.application.spec.source as typeof t.application.spec.source | undefined;
      if (!source) {
        throw new ExpansionError(
          'invalid-target',
          'the rendered template has neither spec.source nor spec.sources',
          `${at}.spec.source`,
        );
      }
      const unrendered = unrenderedSourceField(source);
      if (unrendered)
        throw new ExpansionError(
          'unsupported-source',
          `${unrendered[1]}; refused rather than rendered as plain YAML`,
          `${at}.spec.source.${unrendered[0]}`,
        );
      if (!source.repoURL)
        throw new ExpansionError(
          'invalid-target',
          'spec.source.repoURL is empty',
          `${at}.spec.source.repoURL`,
        );
      const refused = gate.checkTarget(at, source.repoURL, projectCluster, namespace);
      if (refused) throw new ExpansionError(refused.code, refused.message, refused.path);
      const helm = source['helm'];
      let helmOptions: HelmOptions;
      try {
        helmOptions = parseHelmOptions(helm, `${at}.spec.source.helm`);
      } catch (e) {
        if (e instanceof ManifestError) throw new ExpansionError('invalid-helm-options', e.message, e.file);
        throw e;
      }
      const application = applicationOf(t);
      const appInputs = canonicalJson([helmApplicationInputs(helmOptions, application), capabilities]);
      const chartName = typeof source['chart'] === 'string' ? source['chart'] : '';
      let rendered: Promise<string>;
      let placed: Pick<
        DesiredTarget,
        'repoUrl' | 'sourcePath' | 'targetRevision' | 'desiredRevision' | 'sources'
      >;
      if (chartName !== '') {
        const refused = chartRepositoryRefusal(source.repoURL, chartName);
        if (refused) throw new ExpansionError('invalid-target', refused, `${at}.spec.source.repoURL`);
        if (source.path) {
          throw new ExpansionError(
            'invalid-target',
            'a chart from a Helm repository has no path (give chart or path, not both)',
            `${at}.spec.source.path`,
          );
        }
        const targetRevision = source.targetRevision || '*';
        const version = await this.chartVersion(
          chartVersions,
          source.repoURL,
          chartName,
          targetRevision,
          `${at}.spec.source.targetRevision`,
        );
        placed = {
          repoUrl: source.repoURL,
          sourcePath: chartName,
          targetRevision,
          desiredRevision: version.version,
          sources: null,
        };
        const key = canonicalJson([
          'chart',
          source.repoURL,
          chartName,
          version.version,
          version.digest ?? version.url,
          helm ?? null,
          appInputs,
        ]);
        let digest = renders.get(key);
        if (!digest) {
          this.metrics.renders.inc();
          digest = this.renderChartOne(
            source.repoURL,
            chartName,
            version,
            at,
            helm,
            application,
            capabilities,
          );
          digest.catch(() => undefined);
          renders.set(key, digest);
        }
        rendered = digest;
        readsCapabilities();
      } else {
        const repo = await this.preparedRepository(source.repoURL, { appSetName, register, git, repoByUrl });
        const targetRevision = source.targetRevision || 'HEAD';
        const sha = this.resolve(git, repo, targetRevision, `${at}.spec.source.targetRevision`);
        const path = source.path ?? '';
        // Whether the path is a chart is asked once per (commit, path, options).
        const chartKey = `${repo.id}\0${sha}\0${path}\0${canonicalJson([source['helm'] ?? null, source['kustomize'] ?? null])}`;
        let isChart = charts.get(chartKey);
        if (!isChart) {
          isChart = this.render.rendersAsChart({
            repositoryId: repo.id,
            revision: sha,
            path,
            kustomize: source['kustomize'],
            helm,
          });
          charts.set(chartKey, isChart);
        }
        placed = { repoUrl: repo.url, sourcePath: path, targetRevision, desiredRevision: sha, sources: null };
        // One render per distinct input, however many targets share it (1,000 clusters, one render).
        const chart = await isChart;
        if (chart) readsCapabilities();
        const key = `${renderKey(repo.id, sha, path, source)}${chart ? `\0${appInputs}` : ''}`;
        let digest = renders.get(key);
        if (!digest) {
          this.metrics.renders.inc();
          digest = this.renderOne(
            repo,
            sha,
            path,
            `${at}.spec.source.path`,
            source['kustomize'],
            helm,
            application,
            capabilities,
          );
          // Awaited below, in target order; this only keeps a failure from counting as unhandled
          // while the loop goes on.
          digest.catch(() => undefined);
          renders.set(key, digest);
        }
        rendered = digest;
      }
      finish(rendered, placed);
    }
    // Errors found without a render (names, clusters, revisions) come first; then the first target,
    // in order, whose render or bundle check failed.
    for (const finish of awaitingBundle) await finish();
    return {
      desired,
      repoUrls: [...repoByUrl.keys()].sort(),
      refs: git.resolvedRefs(),
      capabilities: chartCapabilities,
    };
  }

  /**
   * A multi-source target (`spec.sources`): every source checked as the submission did (now with its
   * parameters filled in), each Git repository a source or a `ref:` names registered, fetched and
   * resolved like a single source's (so a commit to a values repository re-expands the appset),
   * each chart's version resolved once per expansion; then one render per distinct resolved input.
   */
  private async placeSources(
    t: GeneratedTarget,
    at: string,
    ctx: {
      appSetName: string;
      register: boolean;
      git: ExpansionGitReads;
      repoByUrl: Map<string, Repository>;
      chartVersions: Map<string, Promise<ChartVersion>>;
      renders: Map<string, Promise<string>>;
      gate: ProjectGate;
      projectCluster: { name: string; labels: Record<string, string> };
      namespace: string;
      capabilities: Capabilities;
    },
  ): Promise<{
    rendered: Promise<string>;
    placed: Pick<DesiredTarget, 'repoUrl' | 'sourcePath' | 'targetRevision' | 'desiredRevision' | 'sources'>;
  }> {
    const spec = t.application.spec as Record<string, unknown>;
    const raw = Array.isArray(spec['sources']) ? (spec['sources'] as unknown[]) : [];
    raw.forEach((item, i) => {
      if (typeof item !== 'object' || item === null) return;
      const refused = multiSourceRefusal(item as Record<string, unknown>);
      if (refused)
        throw new ExpansionError('unsupported-source', refused[1], `${at}.spec.sources[${i}].${refused[0]}`);
    });
    let parsed: ApplicationSource[];
    try {
      // Field paths relative to the Application, so that targets with the same sources share a render.
      parsed = parseApplicationSources({ sources: spec['sources'] }, 'spec');
    } catch (e) {
      if (!(e instanceof ManifestError)) throw e;
      throw new ExpansionError(
        e.code === 'INVALID_HELM_OPTIONS' ? 'invalid-helm-options' : 'invalid-target',
        e.message,
        `${at}.${e.file}`,
      );
    }
    const resolved: ResolvedSource[] = [];
    for (const [i, s] of parsed.entries()) {
      const field = `${at}.spec.sources[${i}]`;
      const refused = ctx.gate.checkTarget(
        at,
        s.repoURL,
        ctx.projectCluster,
        ctx.namespace,
        `spec.sources[${i}]`,
      );
      if (refused) throw new ExpansionError(refused.code, refused.message, refused.path);
      if (s.kind === 'chart') {
        const refused = chartRepositoryRefusal(s.repoURL, s.chart);
        if (refused) throw new ExpansionError('invalid-target', refused, `${field}.repoURL`);
        const version = await this.chartVersion(
          ctx.chartVersions,
          s.repoURL,
          s.chart,
          s.targetRevision || '*',
          `${field}.targetRevision`,
        );
        resolved.push({ source: s, version });
        continue;
      }
      // The one repository-URL check of the hub, registration and first fetch: as for one source.
      const repo = await this.preparedRepository(s.repoURL, ctx);
      const sha = this.resolve(ctx.git, repo, s.targetRevision || 'HEAD', `${field}.targetRevision`);
      resolved.push({ source: s, repositoryId: repo.id, revision: sha });
    }
    const application = applicationOf(t);
    const key = canonicalJson([
      'sources',
      resolved.map((r) =>
        'version' in r
          ? [r.source, r.version.version, r.version.digest ?? r.version.url]
          : [r.source, r.repositoryId, r.revision],
      ),
      application,
      ctx.capabilities,
    ]);
    let rendered = ctx.renders.get(key);
    if (!rendered) {
      this.metrics.renders.inc();
      rendered = this.render
        .renderSourcesBundle({ sources: resolved, application, capabilities: ctx.capabilities })
        .then((b) => b.digest)
        .catch((e: unknown) => {
          if (e instanceof RenderError)
            throw new ExpansionError(e.code, e.message, `${at}.spec.sources: ${e.path}`);
          throw e;
        });
      rendered.catch(() => undefined);
      ctx.renders.set(key, rendered);
    }
    // parseApplicationSources refused a list of only refs already; this keeps the types honest.
    const main = resolved.find((r) => r.source.kind !== 'ref');
    if (!main)
      throw new ExpansionError(
        'invalid-target',
        'has only ref sources: nothing to render',
        `${at}.spec.sources`,
      );
    const requested = (r: ResolvedSource): string =>
      'version' in r ? r.source.targetRevision || '*' : r.source.targetRevision || 'HEAD';
    return {
      rendered,
      placed: {
        repoUrl: main.source.repoURL,
        sourcePath: pathOf(main),
        targetRevision: resolved.map(requested).join(','),
        desiredRevision: sourcesRevision(resolved),
        sources: resolved.map((r) => ({
          repoUrl: r.source.repoURL,
          ...('version' in r
            ? { chart: r.source.chart }
            : r.source.kind === 'git'
              ? { path: r.source.path || '.' }
              : {}),
          ...(r.source.ref !== undefined ? { ref: r.source.ref } : {}),
          targetRevision: requested(r),
          revision: 'version' in r ? r.version.version : r.revision,
        })),
      },
    };
  }

  private async renderOne(
    repo: Repository,
    sha: string,
    path: string,
    at: string,
    kustomize: unknown,
    helm: unknown,
    application: RenderApplication,
    capabilities: Capabilities,
  ): Promise<string> {
    try {
      return await this.render.render({
        repositoryId: repo.id,
        repoUrl: repo.url,
        revision: sha,
        path,
        kustomize,
        helm,
        application,
        capabilities,
      });
    } catch (e) {
      if (e instanceof RenderError) throw new ExpansionError(e.code, e.message, `${at}: ${e.path}`);
      throw e;
    }
  }

  /**
   * The version a chart's constraint resolves to, asked once per (repository, chart, constraint) in
   * an expansion: every target of it gets the same version, even if the index changes meanwhile.
   */
  private chartVersion(
    cache: Map<string, Promise<ChartVersion>>,
    repoUrl: string,
    chart: string,
    targetRevision: string,
    /** The targetRevision field, for errors. */
    field: string,
  ): Promise<ChartVersion> {
    const key = `${repoUrl}\0${chart}\0${targetRevision}`;
    let version = cache.get(key);
    if (!version) {
      version = this.render.resolveChart(repoUrl, chart, targetRevision).catch((e: unknown) => {
        if (e instanceof RenderError) {
          throw new ExpansionError(e.code, e.message, field);
        }
        throw e;
      });
      cache.set(key, version);
    }
    return version;
  }

  private async renderChartOne(
    repoUrl: string,
    chart: string,
    version: ChartVersion,
    at: string,
    helm: unknown,
    application: RenderApplication,
    capabilities: Capabilities,
  ): Promise<string> {
    try {
      return (
        await this.render.renderChartBundle({ repoUrl, chart, version, helm, application, capabilities })
      ).digest;
    } catch (e) {
      if (e instanceof RenderError) throw new ExpansionError(e.code, e.message, `${at}.spec.source.chart`);
      throw e;
    }
  }

  /**
   * The repository of `url` ready for this expansion's reads (registered, fetched, prepared), once
   * per expansion however many sources name it.
   */
  private async preparedRepository(
    url: string,
    ctx: {
      appSetName: string;
      register: boolean;
      git: ExpansionGitReads;
      repoByUrl: Map<string, Repository>;
    },
  ): Promise<Repository> {
    const known = ctx.repoByUrl.get(url);
    if (known) return known;
    const repo = await this.readyRepository(url, ctx.appSetName, ctx.register);
    await ctx.git.prepare(repo.id, { fetch: ctx.register });
    ctx.repoByUrl.set(url, repo);
    return repo;
  }

  /** A registered repository with a usable mirror; fetched now if it never was. */
  private async readyRepository(url: string, appSetName: string, register: boolean): Promise<Repository> {
    // Generated URLs ({{…}} in repoURL) meet the same check as literal ones.
    try {
      this.repos.checkUrl(url, 'repoURL');
    } catch (e) {
      if (e instanceof HubError)
        throw new ExpansionError(e.code, e.message, `repoURL ${withoutCredentials(url)}`);
      throw e;
    }
    if (!register) {
      const known = await this.db.prisma.repository.findUnique({ where: { url } });
      if (!known || known.lastFetchedAt === null || !this.mirrors.mirrors.hasMirror(known.id)) {
        throw new ExpansionError(
          'repository-not-fetched',
          `repository ${url} has not been fetched yet; the preview fetches nothing — POST /api/v1/repositories first`,
          `repoURL ${url}`,
        );
      }
      return known;
    }
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

  private files(
    git: ExpansionGitReads,
    repoByUrl: Map<string, Repository>,
    repoURL: string,
    revision: string,
  ): RepositoryFiles {
    const repo = repoByUrl.get(repoURL);
    if (!repo) {
      throw new ExpansionError(
        'repository-unknown',
        `repository ${repoURL} is read by a generator but was not fetched; write its URL literally`,
        `repoURL ${repoURL}`,
      );
    }
    const sha = this.resolve(git, repo, revision, `git generator ${repoURL}`);
    return {
      listFiles: () => git.listFiles(repo.id, sha),
      readFile: (path) => git.readFile(repo.id, sha, path),
    };
  }

  private resolve(git: ExpansionGitReads, repo: Repository, ref: string, at: string): string {
    try {
      return git.resolve(repo.id, ref);
    } catch (e) {
      if (e instanceof GitMirrorError)
        throw new ExpansionError('unknown-revision', `${repo.url}: ${e.message}`, at);
      throw e;
    }
  }

  private clusterOf(t: GeneratedTarget, clusters: ClusterIndex, at: string): Cluster {
    const d = t.application.spec.destination;
    if (d.name) {
      const c = clusters.byName.get(d.name);
      if (!c)
        throw new ExpansionError(
          'unknown-cluster',
          `destination cluster "${d.name}" is not in the inventory; POST /api/v1/clusters first`,
          `${at}.spec.destination.name`,
        );
      return c;
    }
    if (d.server) {
      const c = clusters.byServer.get(d.server);
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
    document: unknown,
    computed: Computed,
    confirmation?: ExpansionConfirmation,
  ): Promise<ExpansionOutcome | Stale> {
    const { desired, repoUrls, refs } = computed;
    const clash = await findNameClash(
      this.db,
      desired.map((d) => d.name),
      appSetId,
    );
    if (clash) {
      const e = new ExpansionError(
        'target-name-conflict',
        `target "${clash.target}" already belongs to appset "${clash.appSet}"`,
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
    const inputsHash = targetSetHash(desired);
    const limit = deletionGuardLimit(document, this.config.appsets.deletionGuardPercent);
    let touched = new Set<string>();
    // Everything slow (Git, generators, renders) is done: the transaction only reads the current
    // targets, plans against them and writes the difference set-based, so it stays short.
    const outcome = await this.db.prisma.$transaction(async (tx): Promise<ExpansionOutcome | Stale> => {
      // Expansions of one appset on two hub replicas take turns here.
      await tx.$executeRaw`SELECT 1 FROM "ApplicationSet" WHERE "id" = ${appSetId} FOR UPDATE`;
      const appSet = await tx.applicationSet.findUniqueOrThrow({ where: { id: appSetId } });
      if (appSet.status === 'Deleting') return { status: 'Gone', created: 0, updated: 0, deleted: 0 };
      // Computed from older inputs than what is stored now (a ref another replica recorded at a newer
      // commit, a spec replaced meanwhile): writing it could move targets backwards. Checked under
      // the appset's row lock, so no newer expansion can commit between this check and the write.
      if (
        canonicalJson(appSet.spec) !== canonicalJson(document) ||
        (await refsMoved(tx, refs)) ||
        (await capabilitiesMoved(tx, computed.capabilities))
      )
        return STALE;
      const previousHold = appSet.pendingExpansion as PendingExpansion | null;
      // A target being deleted with its objects is gone as far as planning goes (not counted by the
      // guard, not deleted twice) unless Git wants it again: then it is updated in place.
      const wanted = new Set(desired.map((d) => d.name));
      const existing = (await tx.target.findMany({ where: { appSetId } })).filter(
        (t) => t.deletionId === null || wanted.has(t.name),
      );
      const plan = planExpansion(existing, desired);
      const verdict = evaluateDeletionGuard(
        guardInput(existing.length, plan, desired.length, appSet.guardBaseline),
        limit,
      );
      const confirmed = confirmation !== undefined && confirmation.inputsHash === inputsHash;
      if (verdict.wouldHold && !confirmed) {
        // Nothing is created, updated or deleted: the whole expansion waits, as computed.
        const held: PendingExpansion = {
          inputsHash,
          heldAt: previousHold?.inputsHash === inputsHash ? previousHold.heldAt : new Date().toISOString(),
          currentCount: existing.length,
          targetCount: desired.length,
          delete: plan.delete.map((t) => t.name).sort(),
          create: plan.create.map((d) => d.name).sort(),
          update: plan.update.map((u) => u.desired.name).sort(),
          move: plan.move.map((m) => m.desired.name).sort(),
          deletePercent: verdict.deletePercent,
          limit,
          baseline: verdict.baseline,
        };
        const error = {
          code: 'deletion-held',
          message: heldMessage(appSetName, held),
          path: 'spec.deletionGuard.maxDeletePercent',
        };
        await tx.applicationSet.update({
          where: { id: appSetId },
          data: {
            status: 'Held',
            error: toJson(error),
            pendingExpansion: toJson(held),
            repoUrls,
            lastExpandedAt: new Date(),
          },
        });
        if (previousHold?.inputsHash !== inputsHash) {
          await this.audit.record(
            {
              actor: 'hub',
              action: 'appset.expansion-held',
              scope: `appset:${appSetName}`,
              details: { ...held },
            },
            tx,
          );
        }
        return { status: 'Held', created: 0, updated: 0, deleted: 0, error, held };
      }
      // With Argo CD's resources finalizer, removed targets are deleted with their objects by their
      // agents (a tombstone each); the row goes when the agent reports. Otherwise they are orphaned.
      const cascaded = deletesResourcesOnDeletion(document)
        ? await requestExpansionDeletions(tx, appSetName, plan.delete)
        : { marked: [], audit: [] };
      const marked = new Set(cascaded.marked.map((t) => t.id));
      touched = await writePlan(tx, appSetId, {
        ...plan,
        delete: plan.delete.filter((t) => !marked.has(t.id)),
      });
      for (const t of cascaded.marked) touched.add(t.clusterId);
      if (cascaded.audit.length > 0) await this.audit.recordMany(cascaded.audit, tx);
      await tx.applicationSet.update({
        where: { id: appSetId },
        data: {
          status: 'Ready',
          error: Prisma.DbNull,
          pendingExpansion: Prisma.DbNull,
          guardBaseline: nextGuardBaseline(verdict, desired.length, confirmed),
          repoUrls,
          lastExpandedAt: new Date(),
        },
      });
      if (confirmed) {
        await this.audit.record(
          {
            actor: confirmation.actor,
            action: 'appset.expansion-confirmed',
            scope: `appset:${appSetName}`,
            details: {
              inputsHash,
              reason: confirmation.reason,
              deleted: plan.delete.map((t) => t.name).sort(),
              deletePercent: verdict.deletePercent,
              limit,
            },
          },
          tx,
        );
      } else if (previousHold) {
        // A later expansion within the guard (the Git host recovered) replaces the hold by itself.
        await this.audit.record(
          {
            actor: 'hub',
            action: 'appset.hold-released',
            scope: `appset:${appSetName}`,
            details: { heldInputsHash: previousHold.inputsHash, inputsHash },
          },
          tx,
        );
      }
      const created = plan.create.length;
      // A move is an update to the person who changed the appset; the audit names them apart.
      const updated = plan.update.length + plan.move.length;
      const deleted = plan.delete.length;
      if (created + updated + deleted > 0) {
        await this.audit.record(
          {
            actor: 'hub',
            action: 'appset.expanded',
            scope: `appset:${appSetName}`,
            details: {
              created,
              updated,
              deleted,
              ...(plan.move.length > 0 && {
                moved: plan.move.map((m) => ({ name: m.desired.name, to: m.desired.clusterName })),
              }),
              ...(preservesResourcesOnDeletion(document) &&
                deleted > 0 && { preserveResourcesOnDeletion: true }),
              ...(cascaded.marked.length > 0 && {
                deletedWithObjects: cascaded.marked.map((t) => t.name).sort(),
              }),
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
      return { status: 'Ready', created, updated, deleted };
    }, EXPANSION_TX);
    if (outcome === STALE) return STALE;
    // What Git wants is now on the targets; whether agents get it yet is the rollout's decision.
    // Agents are woken after the release, not before: woken first, every long-poll of the fleet
    // recomputed an unchanged assignment set and was still busy when the release's wake-up came
    // (about 2 s at 100 clusters). The wake-up still goes out when the release fails, for changes
    // agents see without one (sync policy, removed targets).
    try {
      await this.release.afterExpansion(appSetId);
    } finally {
      await this.wakeups.notify(touched);
    }
    return outcome;
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

/** What the deletion guard judges for a plan; a move deletes nothing (the target goes on, elsewhere). */
function guardInput(
  current: number,
  plan: ExpansionPlan,
  after: number,
  baseline: number | null,
): GuardInput {
  return { current, deleting: plan.delete.length, after, baseline };
}

/**
 * Creates, updates (only when something differs), moves (same name, another cluster) and deletes
 * that turn `existing` into `desired`.
 */
export function planExpansion(existing: Target[], desired: DesiredTarget[]): ExpansionPlan {
  const byName = new Map(existing.map((t) => [t.name, t]));
  const plan: ExpansionPlan = { create: [], update: [], move: [], delete: [] };
  for (const d of desired) {
    const cur = byName.get(d.name);
    if (!cur) plan.create.push(d);
    else if (cur.clusterId !== d.clusterId) plan.move.push({ current: cur, desired: d });
    else if (!sameTarget(cur, d)) plan.update.push({ current: cur, desired: d });
  }
  const keep = new Set(desired.map((d) => d.name));
  plan.delete = existing.filter((t) => !keep.has(t.name));
  return plan;
}

function sameTarget(cur: Target, d: DesiredTarget): boolean {
  return (
    cur.namespace === d.namespace &&
    cur.repoUrl === d.repoUrl &&
    cur.sourcePath === d.sourcePath &&
    cur.targetRevision === d.targetRevision &&
    cur.desiredRevision === d.desiredRevision &&
    canonicalJson(cur.sources ?? null) === canonicalJson(d.sources) &&
    cur.bundleDigest === d.bundleDigest &&
    canonicalJson(cur.syncPolicy) === canonicalJson(d.syncPolicy) &&
    canonicalJson(cur.params) === canonicalJson(d.params)
  );
}

/**
 * A 20,000-target write takes a few seconds on a busy machine, past Prisma's 5 s default; the
 * bound still ends a transaction that hangs. The wait covers a pool busy with report ingest.
 */
const EXPANSION_TX = { timeout: 60_000, maxWait: 15_000 };

/** An expansion whose inputs moved before it was written: nothing was written. */
const STALE = Symbol('stale expansion');
type Stale = typeof STALE;
/** Recomputations in one job before the job fails and BullMQ retries it. */
const STALE_RETRIES = 3;

/** Whether any ref the expansion resolved is now stored at another commit. */
async function refsMoved(tx: Prisma.TransactionClient, refs: ResolvedRef[]): Promise<boolean> {
  if (refs.length === 0) return false;
  const stored = await tx.repositoryRef.findMany({
    where: { repositoryId: { in: [...new Set(refs.map((r) => r.repositoryId))] } },
    select: { repositoryId: true, ref: true, sha: true },
  });
  const now = new Map(stored.map((r) => [`${r.repositoryId}\0${r.ref}`, r.sha]));
  return refs.some((r) => {
    const sha = now.get(`${r.repositoryId}\0${r.ref.trim() === '' ? 'HEAD' : r.ref.trim()}`);
    return sha !== undefined && sha !== r.sha;
  });
}

/**
 * Whether a cluster whose charts the expansion rendered has reported other capabilities since: its
 * agent's report asks for an expansion, but one already computing would otherwise write renders for
 * the old ones.
 */
async function capabilitiesMoved(tx: Prisma.TransactionClient, used: Map<string, string>): Promise<boolean> {
  if (used.size === 0) return false;
  const now = await tx.cluster.findMany({
    where: { id: { in: [...used.keys()] } },
    select: { id: true, kubeVersion: true, apiVersions: true },
  });
  return now.some((c) => used.get(c.id) !== capabilitiesKey(c));
}

/** Identifies a computed target set: same hash, same creates/updates/deletes against the same database. */
export function targetSetHash(desired: DesiredTarget[]): string {
  const sorted = [...desired].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return createHash('sha256').update(canonicalJson(sorted)).digest('hex').slice(0, 24);
}

function heldMessage(appSetName: string, held: PendingExpansion): string {
  const shown = held.delete.slice(0, 20).join(', ');
  const more = held.delete.length > 20 ? ` and ${held.delete.length - 20} more` : '';
  const why =
    held.delete.length === held.currentCount
      ? 'all of them'
      : held.baseline > held.currentCount
        ? `${held.deletePercent} % of the baseline of ${held.baseline} targets > the ${held.limit} % limit; the baseline moves only when a person confirms`
        : `${held.deletePercent} % > the ${held.limit} % limit`;
  return (
    `expansion held: it would delete ${held.delete.length} of ${held.currentCount} targets (${why}): ${shown}${more}. ` +
    `Nothing changed. If intended, POST /api/v1/appsets/${appSetName}/confirm-expansion ` +
    `{"inputsHash": "${held.inputsHash}", "reason": "..."}`
  );
}

interface ClusterIndex {
  byName: Map<string, Cluster>;
  /** The first cluster (by name) with each non-empty server, as a linear search in name order finds. */
  byServer: Map<string, Cluster>;
}

function indexClusters(clusters: Cluster[]): ClusterIndex {
  const index: ClusterIndex = { byName: new Map(), byServer: new Map() };
  for (const c of clusters) {
    index.byName.set(c.name, c);
    if (c.server !== '' && !index.byServer.has(c.server)) index.byServer.set(c.server, c);
  }
  return index;
}

/**
 * What a render depends on: the commit and path, plus every other source field (Kustomize or
 * Helm options), so targets that differ only in generator parameters share one render while a
 * per-target overlay gets its own.
 */
function renderKey(repositoryId: string, sha: string, path: string, source: object): string {
  const rest: Record<string, unknown> = { ...source };
  delete rest.repoURL;
  delete rest.targetRevision;
  delete rest.path;
  return `${repositoryId}\0${sha}\0${path}\0${canonicalJson(rest)}`;
}

/**
 * What a chart reads of a target's Application (release name, namespace, project): targets share a
 * chart's render only when this agrees too.
 */
function applicationOf(t: GeneratedTarget): RenderApplication {
  const { destination, project } = t.application.spec;
  return {
    name: t.name,
    ...(destination.namespace ? { namespace: destination.namespace } : {}),
    ...(project ? { project } : {}),
  };
}

/**
 * What a chart rendered for cluster `c` sees as `.Capabilities`: what its agent last reported of
 * discovery, else `fallback` (HELM_KUBE_VERSION) until it reports.
 */
export function capabilitiesOf(
  c: Pick<Cluster, 'kubeVersion' | 'apiVersions'>,
  fallback: Capabilities,
): Capabilities {
  return c.kubeVersion ? { kubeVersion: c.kubeVersion, apiVersions: [...c.apiVersions] } : fallback;
}

/** A cluster's reported capabilities as one comparable string. */
function capabilitiesKey(c: Pick<Cluster, 'kubeVersion' | 'apiVersions'>): string {
  return JSON.stringify([c.kubeVersion, c.apiVersions]);
}

function clusterInfo(c: Cluster): ClusterInfo {
  return { name: c.name, server: c.server, labels: asRecord(c.labels), annotations: asRecord(c.annotations) };
}
