import { createHash } from 'node:crypto';
import { mkdtemp, rm, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, posix } from 'node:path';
import { Inject, Injectable, Logger } from '@nestjs/common';
import pLimit, { type LimitFunction } from 'p-limit';
import { Counter } from 'prom-client';
import { type KubeObject, resourceSyncOptionsOf, SyncOptionError } from '@flotilla/contract';
import {
  bundleDigest,
  canonicalJson,
  checkKustomizationTree,
  checkTreeEntries,
  DEFAULT_PARSE_LIMITS,
  hasKustomizeOverrides,
  isManifestPath,
  kustomizationFileIn,
  ManifestError,
  overlayKustomization,
  parseKustomizeOptions,
  parseManifestFiles,
  resolveThroughLinks,
  symlinksOf,
  DEFAULT_TREE_LIMITS,
  safeSourcePath,
  parseHelmOptions,
  helmApplicationInputs,
  type ApplicationSource,
  type Capabilities,
  type ChartSource,
  type ChartVersion,
  type GitSource,
  type RefSource,
  type HelmOptions,
  type KustomizeOptions,
  type KustomizeRunner,
  type TreeEntry,
} from '@flotilla/manifests';
import { preserveSopsKeyOrder } from '@flotilla/sops';
import { AuditLog } from '../audit/audit.service.js';
import { ChartCredentialsService } from './chart-credentials.service.js';
import { HUB_CONFIG, type HubConfig } from '../config/hub-config.js';
import { Database } from '../db/database.js';
import { toJson } from '../common/json.js';
import { GitMirrorError } from '../sources/git/git-mirror.js';
import { GitMirrorsService } from '../sources/git/git-mirrors.service.js';
import { HubMetrics } from '../metrics/hub-metrics.service.js';
import {
  ChartRepositoryClient,
  KustomizeError,
  KustomizeProcess,
  renderApplication,
  resolveHelmBinary,
  type HelmRunOptions,
  type RenderEnvironment,
} from '@flotilla/manifests/node';

export class RenderError extends Error {
  override readonly name = 'RenderError';
  constructor(
    readonly code: string,
    message: string,
    /** `<repo path>/<file>:<line>` where known. */
    readonly path: string,
  ) {
    super(message);
  }
}

export interface RenderSource {
  repositoryId: string;
  repoUrl: string;
  revision: string;
  path: string;
  /** Argo CD's `spec.source.kustomize` as the template rendered it (validated here). */
  kustomize?: unknown;
  /** Argo CD's `spec.source.helm` as the template rendered it (validated here); the path is a chart then. */
  helm?: unknown;
  /**
   * The Application the source belongs to. A chart reads it (default release name, namespace,
   * `$ARGOCD_APP_*`), so it is part of a Helm render's input; other renders ignore it.
   */
  application?: RenderApplication;
  /** What a chart sees as `.Capabilities` (the target's cluster's); unset: HELM_KUBE_VERSION. */
  capabilities?: Capabilities;
}

/** A chart from a Helm repository, at the version its target's constraint resolved to. */
export interface ChartRenderSource {
  repoUrl: string;
  chart: string;
  /** From resolveChart: fixed before rendering, so every target of an expansion gets the same one. */
  version: ChartVersion;
  /** Argo CD's `spec.source.helm` (validated here). */
  helm?: unknown;
  application?: RenderApplication;
  /** What the chart sees as `.Capabilities` (the target's cluster's); unset: HELM_KUBE_VERSION. */
  capabilities?: Capabilities;
}

/**
 * One source of a multi-source Application (parsed by parseApplicationSources with `at` relative to
 * the Application, `spec.sources[i]`, so that targets share renders), with what it resolved to: a
 * Git source or `ref:` source at a commit of a registered repository, a chart at a version.
 */
export type ResolvedSource =
  | { source: GitSource | RefSource; repositoryId: string; revision: string }
  | { source: ChartSource; version: ChartVersion };

export interface MultiSourceRender {
  /** In spec order. */
  sources: ResolvedSource[];
  application?: RenderApplication;
  /** What charts see as `.Capabilities` (the target's cluster's); unset: HELM_KUBE_VERSION. */
  capabilities?: Capabilities;
}

/**
 * The revision a multi-source target records: each source's commit or chart version, in spec order,
 * joined by commas (a commit of any of them is a new revision, as in Argo CD's `revisions`).
 */
export function sourcesRevision(sources: readonly ResolvedSource[]): string {
  return sources.map((r) => ('version' in r ? r.version.version : r.revision)).join(',');
}

export interface RenderApplication {
  name: string;
  /** `spec.destination.namespace`. */
  namespace?: string;
  project?: string;
}

export interface RenderedBundle {
  digest: string;
  manifests: KubeObject[];
  renderer: 'plain' | 'kustomize' | 'helm';
}

type Rendered = Omit<RenderedBundle, 'renderer'>;

/** One render's identity and what its record says about it. */
interface RenderInput {
  key: string;
  /** The Git repository; null for a chart from a Helm repository. */
  repositoryId: string | null;
  repoUrl: string;
  /** The commit, or the chart version. */
  revision: string;
  /** The directory (`.` for the root), or the chart's name. */
  path: string;
  options: unknown;
  renderer: RenderedBundle['renderer'];
  /** Where errors point. */
  where: string;
}

function recordOf(input: RenderInput) {
  return {
    key: input.key,
    repositoryId: input.repositoryId,
    repoUrl: input.repositoryId === null ? input.repoUrl : null,
    revision: input.revision,
    path: input.path,
    options: toJson(input.options),
    renderer: input.renderer,
  };
}

/** The most a kustomize render checks out of one commit. */
const MAX_CHECKOUT_BYTES = 256 * 1024 * 1024;

/**
 * Renders (repo, commit, path, kustomize options) into a bundle. A directory with a kustomization (or
 * any directory given kustomize options) is built by kustomize in a temporary checkout of the commit;
 * any other directory is read as plain YAML/JSON straight from the bare mirror. Every render is
 * checked for determinism: a new input is rendered twice, a known one is compared with the digest it
 * gave before; a mismatch is recorded, counted, audited and refused. Bundles are stored once by digest.
 */
@Injectable()
export class RenderService {
  private readonly logger = new Logger(RenderService.name);
  private readonly kustomize: KustomizeRunner;
  private readonly helm: HelmRunOptions | null;
  private readonly charts: ChartRepositoryClient;
  /**
   * Every render of an input runs in one of RENDER_CONCURRENCY slots: an expansion asks for all of
   * its distinct renders at once, and 1,000 charts must not become 1,000 helm processes.
   */
  private readonly slots: LimitFunction;
  private readonly renders: Counter<'renderer' | 'outcome'>;

  constructor(
    private readonly db: Database,
    private readonly mirrors: GitMirrorsService,
    private readonly audit: AuditLog,
    chartCredentials: ChartCredentialsService,
    metrics: HubMetrics,
    @Inject(HUB_CONFIG) private readonly config: HubConfig,
  ) {
    this.kustomize = new KustomizeProcess({
      binary: config.render.kustomizeBinary,
      timeoutMs: config.render.timeoutSeconds * 1000,
      maxOutputBytes: config.render.maxOutputBytes,
      allowRemoteBases: config.render.allowRemoteBases,
    });
    // Resolved once: a HELM_BINARY that is not executable stops the hub at start-up, not at a render.
    const helm = resolveHelmBinary({
      ...(config.render.helmBinary ? { HELM_BINARY: config.render.helmBinary } : {}),
      ...(process.env['PATH'] !== undefined ? { PATH: process.env['PATH'] } : {}),
    });
    this.helm = helm
      ? {
          binary: helm.path,
          timeoutMs: config.render.timeoutSeconds * 1000,
          maxOutputBytes: config.render.maxOutputBytes,
        }
      : null;
    if (helm) this.logger.log(`charts are rendered by ${helm.path} (from ${helm.from})`);
    else this.logger.warn('no helm binary (HELM_BINARY, PATH, bundled): Helm sources will fail to render');
    this.slots = pLimit(config.render.concurrency);
    this.charts = new ChartRepositoryClient({
      indexTtlMs: config.render.helmRepositoryCacheSeconds * 1000,
      timeoutMs: config.render.timeoutSeconds * 1000,
      maxBytes: 64 * 1024 * 1024,
      credentials: (url) => chartCredentials.forUrl(url),
    });
    this.renders = new Counter({
      name: 'flotilla_renders_total',
      help: 'Bundle renders by renderer (plain, kustomize, helm) and outcome (ok, error, nondeterministic)',
      labelNames: ['renderer', 'outcome'],
      registers: [metrics.registry],
    });
  }

  /** What a chart sees as `.Capabilities` when its cluster has not reported its own: HELM_KUBE_VERSION. */
  defaultCapabilities(): Capabilities {
    return { kubeVersion: this.config.render.helmKubeVersion, apiVersions: [] };
  }

  /** The digest of the bundle for `src` (rendered and stored if needed). */
  async render(src: RenderSource): Promise<string> {
    return (await this.renderBundle(src)).digest;
  }

  /**
   * Renders `src` once, checks it for determinism, stores the bundle, and returns its digest and
   * manifests. Callers render each distinct (repository, commit, path, options) once.
   */
  async renderBundle(src: RenderSource): Promise<RenderedBundle> {
    const where = `${src.repoUrl}@${src.revision.slice(0, 12)}:${src.path || '.'}`;
    const dir = this.translate(where, () => safeSourcePath(src.path));
    const options = this.translate('spec.source.kustomize', () =>
      parseKustomizeOptions(src.kustomize, 'spec.source.kustomize'),
    );
    const helmAsked = src.helm !== undefined && src.helm !== null;
    const helmOptions = this.translate('spec.source.helm', () =>
      parseHelmOptions(helmAsked ? src.helm : undefined, 'spec.source.helm'),
    );
    if (helmAsked && src.kustomize !== undefined && src.kustomize !== null) {
      throw new RenderError(
        'manifest-invalid-source',
        'spec.source: has both helm and kustomize; a source has one renderer',
        'spec.source',
      );
    }
    const entries = await this.gitReadAsync(where, () =>
      this.mirrors.mirrors.listEntries(src.repositoryId, src.revision),
    );
    const under = entries.filter((e) => dir === '' || e.path.startsWith(`${dir}/`));
    if (under.length === 0) {
      throw new RenderError(
        'path-not-found',
        `path "${dir || '.'}" has no files at commit ${src.revision.slice(0, 12)} of ${src.repoUrl}`,
        where,
      );
    }
    const renderer = rendererOf(
      under.map((e) => e.path),
      dir,
      helmAsked,
      hasKustomizeOverrides(options),
    );
    if (renderer === 'helm' && !under.some((e) => e.path === posix.join(dir, 'Chart.yaml'))) {
      throw new RenderError(
        'manifest-chart-not-found',
        `spec.source.path: "${dir || '.'}" holds no Chart.yaml (a source with helm options must be a chart)`,
        where,
      );
    }
    const application = helmApplicationInputs(helmOptions, { name: '', ...src.application });
    const capabilities = src.capabilities ?? this.defaultCapabilities();
    const produce = () =>
      renderer === 'helm'
        ? this.renderHelm(src, dir, helmOptions, application, capabilities, entries, where)
        : renderer === 'kustomize'
          ? this.renderKustomize(src, dir, options, entries, where)
          : this.renderPlain(src, dir, under, entries, where);

    // A chart's output depends on the Application and the capabilities too; the other renders'
    // keys are as they always were, so their recorded digests stay comparable.
    const recorded: unknown =
      renderer === 'helm' ? { helm: helmOptions, application, capabilities } : options;
    const key =
      renderer === 'helm'
        ? helmRenderKey(src.repositoryId, src.revision, dir, helmOptions, application, capabilities)
        : renderKey(src.repositoryId, src.revision, dir, options);
    return this.checkedAndStored(
      {
        key,
        repositoryId: src.repositoryId,
        repoUrl: src.repoUrl,
        revision: src.revision,
        path: dir || '.',
        options: recorded,
        renderer,
        where,
      },
      produce,
    );
  }

  /**
   * Runs `produce` under the determinism check and stores the bundle: a new input is rendered twice,
   * a known one is compared with the digest it gave before; a mismatch is recorded, counted, audited
   * and refused.
   */
  private async checkedAndStored(
    input: RenderInput,
    produce: () => Promise<Rendered>,
  ): Promise<RenderedBundle> {
    const { key, renderer, where } = input;
    const shown = `${input.path} at ${input.revision.slice(0, 12)}`;
    let bundle: RenderedBundle;
    try {
      const prior = await this.db.prisma.renderRecord.findUnique({ where: { key } });
      const first = await this.slots(produce);
      checkResourceOptions(first.manifests, where);
      // A new input is rendered twice; a known one is compared with what it gave before.
      const againstDigest = prior ? prior.digest : (await this.slots(produce)).digest;
      if (againstDigest !== first.digest || prior?.deterministic === false) {
        await this.flagNondeterministic(input, againstDigest, first.digest);
        throw new RenderError(
          'render-nondeterministic',
          `rendering ${shown} gave ${againstDigest} and then ${first.digest}: the same inputs must give the same manifests (a generator with random or time-based output?)`,
          where,
        );
      }
      bundle = { ...first, renderer };
      // Insert-if-absent: another render of the same input may have recorded it meanwhile (two
      // appsets, two replicas); then its digest must be ours too.
      const { count } = await this.db.prisma.renderRecord.createMany({
        data: [{ ...recordOf(input), digest: bundle.digest }],
        skipDuplicates: true,
      });
      if (count === 0) {
        const existing = await this.db.prisma.renderRecord.findUniqueOrThrow({ where: { key } });
        if (existing.digest !== bundle.digest) {
          await this.flagNondeterministic(input, existing.digest, bundle.digest);
          throw new RenderError(
            'render-nondeterministic',
            `rendering ${shown} gave ${existing.digest} and then ${bundle.digest}: the same inputs must give the same manifests`,
            where,
          );
        }
        await this.db.prisma.renderRecord.update({ where: { key }, data: { checkedAt: new Date() } });
      }
    } catch (e) {
      const nondeterministic = e instanceof RenderError && e.code === 'render-nondeterministic';
      this.renders.inc({ renderer, outcome: nondeterministic ? 'nondeterministic' : 'error' });
      throw e;
    }
    this.renders.inc({ renderer, outcome: 'ok' });
    // Insert-if-absent in one statement: two expansions storing the same bundle at once (a queued
    // one and a direct one) both succeed, where an upsert's read-then-insert lets one fail. A bundle
    // rendered again is made young again (at most hourly), so retention, which prunes only old
    // unreferenced bundles, cannot take it between this render and the target naming it; and if
    // retention deleted it meanwhile, the conflict is gone and this inserts it anew.
    await this.db.prisma.$executeRaw`
      INSERT INTO "Bundle" ("digest", "manifests", "repoUrl", "revision", "path")
      VALUES (${bundle.digest}, ${JSON.stringify(toJson(bundle.manifests))}::jsonb, ${input.repoUrl},
              ${input.revision}, ${input.path})
      ON CONFLICT ("digest") DO UPDATE SET "createdAt" = now()
        WHERE "Bundle"."createdAt" < now() - interval '1 hour'`;
    return bundle;
  }

  /**
   * The version of `chart` that `targetRevision` (a version or a semver range; empty = the latest)
   * names in the Helm repository's index.yaml, fetched and cached for a minute.
   */
  async resolveChart(repoUrl: string, chart: string, targetRevision: string): Promise<ChartVersion> {
    try {
      return await this.charts.resolve(repoUrl, chart, targetRevision);
    } catch (e) {
      if (e instanceof ManifestError) {
        throw new RenderError('manifest-chart-not-found', e.message, `${repoUrl} ${chart}`);
      }
      throw e;
    }
  }

  /**
   * Renders a chart from a Helm repository (downloaded, checked against the index's digest, unpacked)
   * with the real `helm template`, through the same code as `flotilla render`; value files are read
   * from the chart package itself. Checked for determinism and stored like every other render.
   */
  async renderChartBundle(src: ChartRenderSource): Promise<RenderedBundle> {
    const version = src.version.version;
    const where = `${src.repoUrl} ${src.chart}@${version}`;
    const helm = this.translate('spec.source.helm', () => parseHelmOptions(src.helm, 'spec.source.helm'));
    const application = helmApplicationInputs(helm, { name: '', ...src.application });
    const capabilities = src.capabilities ?? this.defaultCapabilities();
    const key = createHash('sha256')
      .update(
        canonicalJson([
          'chart',
          src.repoUrl,
          src.chart,
          version,
          src.version.digest ?? src.version.url,
          helm,
          application,
          capabilities,
        ]),
      )
      .digest('hex');
    const produce = () =>
      this.renderThrough(
        application,
        [
          {
            kind: 'chart',
            at: 'spec.source',
            repoURL: src.repoUrl,
            chart: src.chart,
            targetRevision: version,
            helm,
          },
        ],
        capabilities,
        {
          dirOf: (_url, _revision, at) => {
            throw new ManifestError(
              'INVALID_SOURCE',
              at,
              'a chart from a Helm repository reads no Git repository',
            );
          },
        },
        [],
        where,
        `chart ${src.chart} ${version} renders no Kubernetes objects`,
      );
    return this.checkedAndStored(
      {
        key,
        repositoryId: null,
        repoUrl: src.repoUrl,
        revision: version,
        path: src.chart,
        options: { helm, application, capabilities, digest: src.version.digest ?? null },
        renderer: 'helm',
        where,
      },
      produce,
    );
  }

  /**
   * Renders a multi-source Application through the same code as `flotilla render`
   * (renderApplication): every Git repository a source or a `ref:` names is checked out at the commit
   * it resolved to (one checkout per distinct commit), charts from Helm repositories are fetched at
   * their version, and `$ref/…` value files are read from the ref's checkout. A source that is a
   * kustomization is refused (the hub builds kustomizations as single sources only). Checked for
   * determinism and stored like every other render; the key is every source at what it resolved to,
   * the Application and the capabilities.
   */
  async renderSourcesBundle(src: MultiSourceRender): Promise<RenderedBundle> {
    const shown = (r: ResolvedSource): string =>
      'version' in r
        ? `${r.source.repoURL} ${r.source.chart}@${r.version.version}`
        : `${r.source.repoURL}@${r.revision.slice(0, 12)}${r.source.kind === 'git' ? `:${r.source.path || '.'}` : ''}`;
    const where = src.sources.map(shown).join(' + ');
    const application: RenderApplication = { name: '', ...src.application };
    const capabilities = src.capabilities ?? this.defaultCapabilities();
    // What decides the output: each source with what it resolved to instead of what it asked for.
    const inputs = src.sources.map((r) =>
      'version' in r
        ? { ...r.source, version: r.version.version, digest: r.version.digest ?? r.version.url }
        : { ...r.source, repositoryId: r.repositoryId, revision: r.revision },
    );
    const key = createHash('sha256')
      .update(canonicalJson(['sources', inputs, application, capabilities]))
      .digest('hex');
    // One listing per distinct commit; every check that needs no checkout is done before rendering.
    const commits = new Map<string, { repositoryId: string; revision: string }>();
    for (const r of src.sources) {
      if ('version' in r) continue;
      commits.set(`${r.repositoryId}\0${r.revision}`, { repositoryId: r.repositoryId, revision: r.revision });
    }
    const entriesOf = new Map<string, TreeEntry[]>();
    for (const [id, c] of commits) {
      const entries = await this.gitReadAsync(where, () =>
        this.mirrors.mirrors.listEntries(c.repositoryId, c.revision),
      );
      this.translate(where, () =>
        checkTreeEntries(entries, {
          maxFileBytes: Number.POSITIVE_INFINITY,
          maxTreeBytes: MAX_CHECKOUT_BYTES,
        }),
      );
      entriesOf.set(id, entries);
    }
    let anyChart = false;
    for (const r of src.sources) {
      if ('version' in r) {
        anyChart = true;
        continue;
      }
      const s = r.source;
      if (s.kind === 'ref') continue;
      const entries = entriesOf.get(`${r.repositoryId}\0${r.revision}`) ?? [];
      const under = entries.filter((e) => s.path === '' || e.path.startsWith(`${s.path}/`));
      if (under.length === 0) {
        throw new RenderError(
          'path-not-found',
          `${s.at}.path: "${s.path || '.'}" has no files at commit ${r.revision.slice(0, 12)} of ${s.repoURL}`,
          where,
        );
      }
      const renderer = rendererOf(
        under.map((e) => e.path),
        s.path,
        s.helm !== undefined,
        s.kustomize !== undefined,
      );
      if (renderer === 'kustomize') {
        throw new RenderError(
          'unsupported-source',
          `${s.at}.path: "${s.path || '.'}" is a kustomization; kustomize in a multi-source application is not rendered by the hub yet (use a single source for it)`,
          where,
        );
      }
      if (renderer === 'helm') anyChart = true;
      else {
        // The limits of a plain render read from the mirror.
        this.translate(where, () =>
          checkTreeEntries(
            under.filter((e) => e.kind !== 'file' || isManifestPath(e.path)),
            DEFAULT_TREE_LIMITS,
            symlinksOf(entries),
          ),
        );
      }
    }
    const first = src.sources.find((r) => r.source.kind !== 'ref') ?? src.sources[0];
    const produce = async (): Promise<Rendered> => {
      const work = await mkdtemp(join(tmpdir(), 'flotilla-render-'));
      try {
        const dirs = new Map<string, string>();
        let n = 0;
        for (const [id, c] of commits) {
          const root = join(work, `repo-${n++}`);
          await mkdir(root);
          await this.gitReadAsync(where, () =>
            this.mirrors.mirrors.checkout(c.repositoryId, c.revision, root),
          );
          dirs.set(id, root);
        }
        // A source names its repository by URL and revision; each resolves to the checkout of its commit.
        const byRequest = new Map<string, { dir: string; revision: string }>();
        for (const r of src.sources) {
          if ('version' in r) continue;
          const dir = dirs.get(`${r.repositoryId}\0${r.revision}`) ?? '';
          byRequest.set(`${r.source.repoURL}\0${r.source.targetRevision}`, { dir, revision: r.revision });
        }
        const sources: ApplicationSource[] = src.sources.map((r) =>
          // The version fixed by the expansion, so every target of it renders the same one.
          'version' in r ? { ...r.source, targetRevision: r.version.version } : r.source,
        );
        return await this.renderThrough(
          application,
          sources,
          capabilities,
          {
            dirOf: (repoURL, targetRevision, at) => {
              const found = byRequest.get(`${repoURL}\0${targetRevision}`);
              if (!found)
                throw new ManifestError(
                  'INVALID_SOURCE',
                  at,
                  `${repoURL} is not a source of this application`,
                );
              return found.dir;
            },
            revisionOf: (repoURL, targetRevision) =>
              byRequest.get(`${repoURL}\0${targetRevision}`)?.revision ?? targetRevision,
          },
          [...dirs.values()],
          where,
          'the sources render no Kubernetes objects',
        );
      } finally {
        await rm(work, { recursive: true, force: true });
      }
    };
    return this.checkedAndStored(
      {
        key,
        repositoryId: null,
        repoUrl: first?.source.repoURL ?? '',
        revision: sourcesRevision(src.sources),
        path: first ? pathOf(first) : '',
        options: { sources: inputs, application, capabilities },
        renderer: anyChart ? 'helm' : 'plain',
        where,
      },
      produce,
    );
  }

  /**
   * Whether `src` renders as a chart (see rendererOf), so that its render depends on the
   * Application. An unreadable source answers false: its render reports the error.
   */
  async rendersAsChart(
    src: Pick<RenderSource, 'repositoryId' | 'revision' | 'path' | 'kustomize' | 'helm'>,
  ): Promise<boolean> {
    if (src.helm !== undefined && src.helm !== null) return true;
    try {
      const dir = safeSourcePath(src.path);
      const entries = await this.mirrors.mirrors.listEntries(src.repositoryId, src.revision);
      const paths = entries.map((e) => e.path).filter((p) => dir === '' || p.startsWith(`${dir}/`));
      return (
        rendererOf(paths, dir, false, hasKustomizeOverrides(parseKustomizeOptions(src.kustomize))) === 'helm'
      );
    } catch {
      return false;
    }
  }

  private async renderPlain(
    src: RenderSource,
    dir: string,
    under: TreeEntry[],
    entries: TreeEntry[],
    where: string,
  ): Promise<Rendered> {
    const links = symlinksOf(entries);
    this.translate(where, () =>
      checkTreeEntries(
        under.filter((e) => e.kind !== 'file' || isManifestPath(e.path)),
        DEFAULT_TREE_LIMITS,
        links,
      ),
    );
    const manifestEntries = under.filter((e) => e.kind !== 'submodule' && isManifestPath(e.path));
    if (manifestEntries.length === 0) {
      throw new RenderError(
        'no-manifests',
        `path "${dir || '.'}" holds no YAML or JSON manifests (${under.length} other files)`,
        where,
      );
    }
    // A symlink inside the repository is read through (checkTreeEntries refused the others).
    const contents = await this.gitReadAsync(where, () =>
      this.mirrors.mirrors.readFiles(
        src.repositoryId,
        src.revision,
        manifestEntries.map((e) => linkedPath(e, links)),
      ),
    );
    const files = manifestEntries.map((e, i) => ({
      path: dir ? e.path.slice(dir.length + 1) : e.path,
      content: contents[i] ?? '',
    }));
    return this.parse(files, where, dir, `path "${dir || '.'}"`);
  }

  private async renderKustomize(
    src: RenderSource,
    dir: string,
    options: KustomizeOptions,
    entries: TreeEntry[],
    where: string,
  ): Promise<Rendered> {
    const repoPaths = new Set<string>();
    for (const e of entries) {
      repoPaths.add(e.path);
      for (let d = posix.dirname(e.path); d !== '.'; d = posix.dirname(d)) repoPaths.add(d);
    }
    const read = (path: string) =>
      this.gitRead(where, () => this.mirrors.mirrors.readFile(src.repositoryId, src.revision, path));
    const links = symlinksOf(entries);
    const reached = this.translate(where, () =>
      checkKustomizationTree(dir, repoPaths, read, this.config.render.allowRemoteBases, links),
    );
    const inReach = (path: string) => reached.some((d) => d === '' || path.startsWith(`${d}/`));
    this.translate(where, () => {
      // The whole checkout: no symlink out of it, and a bounded size; then the per-file limit on
      // what this render's kustomizations can read.
      checkTreeEntries(entries, { maxFileBytes: Number.POSITIVE_INFINITY, maxTreeBytes: MAX_CHECKOUT_BYTES });
      checkTreeEntries(
        entries.filter((e) => inReach(e.path)),
        { maxFileBytes: DEFAULT_PARSE_LIMITS.maxFileBytes, maxTreeBytes: MAX_CHECKOUT_BYTES },
        links,
      );
    });
    const work = await mkdtemp(join(tmpdir(), 'flotilla-render-'));
    try {
      const root = join(work, 'repo');
      await mkdir(root);
      await this.gitReadAsync(where, () =>
        this.mirrors.mirrors.checkout(src.repositoryId, src.revision, root),
      );
      let buildDir = join(root, dir);
      if (hasKustomizeOverrides(options)) {
        buildDir = await this.writeOverlay(root, dir, options, entries, where);
      }
      let output: string;
      try {
        output = await this.kustomize.build(buildDir);
      } catch (e) {
        if (e instanceof KustomizeError) {
          // Name files as the repository does, not by the throwaway checkout's path.
          const stderr = oneParagraph(e.stderr.replaceAll(`${root}/`, ''));
          throw new RenderError(
            e.code,
            `kustomize build of ${dir || '.'} failed: ${stderr || e.message}`,
            where,
          );
        }
        throw e;
      }
      return this.parse(
        [{ path: 'kustomize-build-output.yaml', content: output }],
        where,
        undefined,
        `the kustomize output of ${dir || '.'}`,
      );
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  }

  /**
   * Renders a chart of the repository with the real `helm template`, through the same code as
   * `flotilla render` (renderApplication), in a temporary checkout of the commit: value files and
   * file parameters are read from it and may not leave it, and no symlink in it may point outside.
   */
  private async renderHelm(
    src: RenderSource,
    dir: string,
    helm: HelmOptions,
    application: RenderApplication,
    capabilities: Capabilities,
    entries: TreeEntry[],
    where: string,
  ): Promise<Rendered> {
    this.translate(where, () =>
      checkTreeEntries(entries, { maxFileBytes: Number.POSITIVE_INFINITY, maxTreeBytes: MAX_CHECKOUT_BYTES }),
    );
    const work = await mkdtemp(join(tmpdir(), 'flotilla-render-'));
    try {
      const root = join(work, 'repo');
      await mkdir(root);
      await this.gitReadAsync(where, () =>
        this.mirrors.mirrors.checkout(src.repositoryId, src.revision, root),
      );
      return await this.renderThrough(
        application,
        [
          {
            kind: 'git',
            at: 'spec.source',
            repoURL: src.repoUrl,
            targetRevision: src.revision,
            path: dir,
            helm,
          },
        ],
        capabilities,
        {
          dirOf: (repoURL, _revision, at) => {
            if (repoURL !== src.repoUrl) {
              throw new ManifestError('INVALID_SOURCE', at, `${repoURL} is not this source's repository`);
            }
            return root;
          },
          revisionOf: () => src.revision,
        },
        [root],
        where,
        `the chart ${dir || '.'} renders no Kubernetes objects`,
      );
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  }

  /**
   * Renders `sources` through the same code as `flotilla render` (renderApplication) with the hub's
   * Helm, chart client and kustomize. A ManifestError becomes a RenderError whose message names files
   * as the repository does (the temporary `checkouts` taken out); no objects at all is the error `empty`.
   */
  private async renderThrough(
    application: RenderApplication,
    sources: ApplicationSource[],
    capabilities: Capabilities,
    repositories: RenderEnvironment['repositories'],
    checkouts: readonly string[],
    where: string,
    empty: string,
  ): Promise<Rendered> {
    let objects: KubeObject[];
    try {
      const rendered = await renderApplication(
        {
          name: application.name,
          ...(application.namespace ? { namespace: application.namespace } : {}),
          ...(application.project ? { project: application.project } : {}),
          sources,
          capabilities,
        },
        { helm: this.helm, charts: this.charts, kustomize: this.kustomize, repositories },
      );
      objects = rendered.objects.map((o) => preserveSopsKeyOrder(o));
    } catch (e) {
      if (!(e instanceof ManifestError)) throw e;
      let message = e.message;
      for (const dir of checkouts) message = message.replaceAll(`${dir}/`, '');
      throw new RenderError(`manifest-${e.code.toLowerCase().replaceAll('_', '-')}`, message, where);
    }
    if (objects.length === 0) throw new RenderError('no-manifests', empty, where);
    return { digest: bundleDigest(objects), manifests: objects };
  }

  /**
   * Writes the generated overlay that applies the per-target options: beside the repository for a
   * committed kustomization (it names that directory as its one resource), or as the kustomization of
   * a plain directory (listing its manifest files), as Argo CD does for a directory without one.
   */
  private async writeOverlay(
    root: string,
    dir: string,
    options: KustomizeOptions,
    entries: TreeEntry[],
    where: string,
  ): Promise<string> {
    const files = entries.filter((e) => dir === '' || e.path.startsWith(`${dir}/`)).map((e) => e.path);
    if (kustomizationFileIn(files, dir)) {
      const overlay = join(root, '.flotilla-overlay');
      await mkdir(overlay);
      await writeFile(
        join(overlay, 'kustomization.yaml'),
        overlayKustomization([posix.join('..', dir || '.')], options),
      );
      return overlay;
    }
    const manifests = files
      .filter((f) => isManifestPath(dir ? f.slice(dir.length + 1) : f))
      .map((f) => (dir ? f.slice(dir.length + 1) : f))
      .sort();
    if (manifests.length === 0) {
      throw new RenderError('no-manifests', `path "${dir || '.'}" holds no YAML or JSON manifests`, where);
    }
    await writeFile(join(root, dir, 'kustomization.yaml'), overlayKustomization(manifests, options));
    return join(root, dir);
  }

  /** `dir`: the directory the file paths are relative to (errors name the repository file). */
  private parse(
    files: { path: string; content: string }[],
    where: string,
    dir: string | undefined,
    what: string,
  ): Rendered {
    const objects = this.translate(
      where,
      () =>
        parseManifestFiles(files).map((o) =>
          // The bundle is stored as jsonb, which re-sorts keys; SOPS's MAC depends on their order, so
          // encrypted objects carry it along (ciphertext only: the hub never decrypts).
          preserveSopsKeyOrder(o),
        ),
      dir,
    );
    if (objects.length === 0) {
      throw new RenderError('no-manifests', `${what} declares no Kubernetes objects`, where);
    }
    return { digest: bundleDigest(objects), manifests: objects };
  }

  private async flagNondeterministic(input: RenderInput, expected: string, got: string): Promise<void> {
    await this.db.prisma.renderRecord.upsert({
      where: { key: input.key },
      create: { ...recordOf(input), digest: expected, deterministic: false, conflictingDigest: got },
      update: { deterministic: false, conflictingDigest: got, checkedAt: new Date() },
    });
    await this.audit.record({
      actor: 'hub',
      action: 'render.nondeterministic',
      scope: `repository:${input.repoUrl}`,
      details: {
        revision: input.revision,
        path: input.path,
        options: input.options,
        renderer: input.renderer,
        digests: [expected, got],
      },
    });
    this.logger.warn(
      `non-deterministic render of ${input.repoUrl}@${input.revision.slice(0, 12)}:${input.path}`,
    );
  }

  /** Runs a pure check and turns its ManifestError into a RenderError naming the repository file. */
  private translate<T>(where: string, fn: () => T, dir?: string): T {
    try {
      return fn();
    } catch (e) {
      if (!(e instanceof ManifestError)) throw e;
      const file = dir === undefined || e.file === '.' ? e.file : dir ? `${dir}/${e.file}` : e.file;
      const at = `${file}${e.line ? `:${e.line}` : ''}`;
      const detail = e.message.replace(`${e.file}${e.line ? `:${e.line}` : ''}: `, '');
      throw new RenderError(
        `manifest-${e.code.toLowerCase().replaceAll('_', '-')}`,
        `${at}: ${detail}`,
        at || where,
      );
    }
  }

  private gitRead<T>(where: string, fn: () => T): T {
    try {
      return fn();
    } catch (e) {
      if (e instanceof GitMirrorError) throw new RenderError(e.code, e.message, where);
      throw e;
    }
  }

  private async gitReadAsync<T>(where: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (e) {
      if (e instanceof GitMirrorError) throw new RenderError(e.code, e.message, where);
      throw e;
    }
  }
}

/** The identity of a render: the same key must always give the same digest. */
export function renderKey(
  repositoryId: string,
  revision: string,
  dir: string,
  options: KustomizeOptions,
): string {
  return createHash('sha256')
    .update(canonicalJson([repositoryId, revision, dir, options]))
    .digest('hex');
}

/**
 * Which tool renders a directory, as Argo CD decides: `helm` options make it a chart; else a
 * kustomization (or kustomize options) makes it Kustomize; else a Chart.yaml makes it a chart;
 * else it is plain YAML/JSON.
 */
export function rendererOf(
  paths: string[],
  dir: string,
  helmAsked: boolean,
  kustomizeOverrides: boolean,
): RenderedBundle['renderer'] {
  if (helmAsked) return 'helm';
  if (kustomizeOverrides || kustomizationFileIn(paths, dir) !== undefined) return 'kustomize';
  return paths.includes(posix.join(dir, 'Chart.yaml')) ? 'helm' : 'plain';
}

/** The identity of a Helm render: the chart's commit and path, its options, Application and capabilities. */
export function helmRenderKey(
  repositoryId: string,
  revision: string,
  dir: string,
  helm: HelmOptions,
  application: RenderApplication,
  capabilities: Capabilities,
): string {
  return createHash('sha256')
    .update(canonicalJson(['helm', repositoryId, revision, dir, helm, application, capabilities]))
    .digest('hex');
}

/** What a target shows as a source's path: the directory, or a chart's name. */
export function pathOf(r: ResolvedSource): string {
  if ('version' in r) return r.source.chart;
  return r.source.kind === 'git' ? r.source.path || '.' : '';
}

/** The file a (checked) symlink leads to, through any other links on the way, as a checkout reads it. */
function linkedPath(e: TreeEntry, links: ReadonlyMap<string, string>): string {
  if (e.kind !== 'symlink') return e.path;
  const from = posix.dirname(e.path) === '.' ? '' : posix.dirname(e.path);
  return resolveThroughLinks(from, e.linkTarget ?? '', links) ?? e.path;
}

function oneParagraph(text: string): string {
  return text.trim().split('\n').slice(0, 20).join('\n');
}

/**
 * Every rendered object's sync and compare options are ones the agent honours: one it would ignore
 * (Replace=true, Prune=confirm, …) refuses the render, naming the object and the annotation entry.
 */
function checkResourceOptions(manifests: readonly KubeObject[], where: string): void {
  for (const m of manifests) {
    try {
      resourceSyncOptionsOf(m);
    } catch (e) {
      if (!(e instanceof SyncOptionError)) throw e;
      const ns = m.metadata.namespace ? `${m.metadata.namespace}/` : '';
      throw new RenderError(e.code, `${m.kind} ${ns}${m.metadata.name}: ${e.message}`, `${where} ${e.path}`);
    }
  }
}
