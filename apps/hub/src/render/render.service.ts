import { posix } from 'node:path';
import { Inject, Injectable } from '@nestjs/common';
import {
  hasKustomizeOverrides,
  helmApplicationInputs,
  parseHelmOptions,
  parseKustomizeOptions,
  safeSourcePath,
  type Capabilities,
  type ChartVersion,
} from '@flotilla/manifests';
import { HUB_CONFIG, type HubConfig } from '../config/hub-config.js';
import { GitMirrorsService } from '../sources/git/git-mirrors.service.js';
import { ChartProvenance } from '../sources/verification/chart-provenance.service.js';
import { ChartRenderer } from './chart-renderer.js';
import { KustomizeRenderer } from './kustomize-renderer.js';
import { MultiSourceRenderer } from './multi-source-renderer.js';
import { PlainRenderer } from './plain-renderer.js';
import { readGitAsync, RenderError, translateManifestError } from './render-error.js';
import { chartRenderKey, helmRenderKey, renderKey, sourcesRenderKey } from './render-keys.js';
import { RenderRecords } from './render-records.service.js';
import {
  pathOf,
  sourcesRevision,
  type ChartRenderSource,
  type MultiSourceRender,
  type RenderApplication,
  type RenderedBundle,
  type RenderSource,
  type ResolvedSource,
} from './render-source.js';
import { RenderTools } from './render-tools.service.js';
import { rendererOf } from './renderer-choice.js';
import { parseSourceOptions } from './source-options.js';

export type {
  ChartRenderSource,
  MultiSourceRender,
  RenderApplication,
  RenderedBundle,
  RenderSource,
  ResolvedSource,
} from './render-source.js';

/**
 * Renders (repo, commit, path, kustomize options) into a bundle. A directory with a kustomization (or
 * any directory given kustomize options) is built by kustomize in a temporary checkout of the commit;
 * any other directory is read as plain YAML/JSON straight from the bare mirror. Every render is
 * checked for determinism: a new input is rendered twice, a known one is compared with the digest it
 * gave before; a mismatch is recorded, counted, audited and refused. Bundles are stored once by digest.
 */
@Injectable()
export class RenderService {
  constructor(
    private readonly mirrors: GitMirrorsService,
    private readonly records: RenderRecords,
    private readonly tools: RenderTools,
    private readonly plain: PlainRenderer,
    private readonly kustomize: KustomizeRenderer,
    private readonly charts: ChartRenderer,
    private readonly multiSource: MultiSourceRenderer,
    private readonly provenance: ChartProvenance,
    @Inject(HUB_CONFIG) private readonly config: HubConfig,
  ) {}

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
    const { dir, kustomize, helm, helmAsked } = parseSourceOptions(src, where);
    const entries = await readGitAsync(where, () =>
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
      hasKustomizeOverrides(kustomize),
    );
    if (renderer === 'helm' && !under.some((e) => e.path === posix.join(dir, 'Chart.yaml'))) {
      throw new RenderError(
        'manifest-chart-not-found',
        `spec.source.path: "${dir || '.'}" holds no Chart.yaml (a source with helm options must be a chart)`,
        where,
      );
    }
    const application = helmApplicationInputs(helm, { name: '', ...src.application });
    const capabilities = src.capabilities ?? this.defaultCapabilities();
    const produce = () =>
      renderer === 'helm'
        ? this.charts.renderFromGit(src, dir, helm, application, capabilities, entries, where, {
            record: !src.preview,
          })
        : renderer === 'kustomize'
          ? this.kustomize.render(src, dir, kustomize, entries, where)
          : this.plain.render(src, dir, under, entries, where);
    // A chart's output depends on the Application and the capabilities too; the other renders'
    // keys are as they always were, so their recorded digests stay comparable.
    const helmRender = renderer === 'helm';
    return this.records.checkAndStore(
      {
        key: helmRender
          ? helmRenderKey(src.repositoryId, src.revision, dir, helm, application, capabilities)
          : renderKey(src.repositoryId, src.revision, dir, kustomize),
        repositoryId: src.repositoryId,
        repoUrl: src.repoUrl,
        revision: src.revision,
        path: dir || '.',
        options: helmRender ? { helm, application, capabilities } : kustomize,
        renderer,
        where,
      },
      produce,
    );
  }

  /**
   * The version of `chart` that `targetRevision` (a version or a semver range; empty = the latest)
   * names in the Helm repository's index.yaml, fetched and cached for a minute.
   */
  resolveChart(repoUrl: string, chart: string, targetRevision: string): Promise<ChartVersion> {
    return this.tools.resolveChart(repoUrl, chart, targetRevision);
  }

  /**
   * Renders a chart from a Helm repository (downloaded, checked against the index's digest, unpacked)
   * with the real `helm template`, through the same code as `flotilla render`; value files are read
   * from the chart package itself. Checked for determinism and stored like every other render.
   */
  async renderChartBundle(src: ChartRenderSource): Promise<RenderedBundle> {
    const version = src.version.version;
    const where = `${src.repoUrl} ${src.chart}@${version}`;
    const helm = translateManifestError('spec.source.helm', () =>
      parseHelmOptions(src.helm, 'spec.source.helm'),
    );
    const application = helmApplicationInputs(helm, { name: '', ...src.application });
    const capabilities = src.capabilities ?? this.defaultCapabilities();
    // A changed provenance setting is another render: the package is judged again under it.
    const provenance = await this.provenance.settingDigest(src.repoUrl);
    return this.records.checkAndStore(
      {
        key: chartRenderKey(src.repoUrl, src.chart, src.version, helm, application, capabilities, provenance),
        repositoryId: null,
        repoUrl: src.repoUrl,
        revision: version,
        path: src.chart,
        options: { helm, application, capabilities, digest: src.version.digest ?? null },
        renderer: 'helm',
        where,
      },
      () =>
        this.charts.renderFromRepository(
          { repoUrl: src.repoUrl, chart: src.chart, version },
          helm,
          application,
          capabilities,
          where,
          { record: !src.preview },
        ),
    );
  }

  /**
   * Renders a multi-source Application through the same code as `flotilla render` (see
   * MultiSourceRenderer). Checked for determinism and stored like every other render; the key is
   * every source at what it resolved to, the Application and the capabilities.
   */
  async renderSourcesBundle(src: MultiSourceRender): Promise<RenderedBundle> {
    const where = src.sources.map(shownSource).join(' + ');
    const application: RenderApplication = { name: '', ...src.application };
    const capabilities = src.capabilities ?? this.defaultCapabilities();
    // What decides the output: each source with what it resolved to instead of what it asked for.
    const inputs = await Promise.all(
      src.sources.map(async (r) =>
        'version' in r
          ? {
              ...r.source,
              version: r.version.version,
              digest: r.version.digest ?? r.version.url,
              ...(await this.provenanceInput(r.source.repoURL)),
            }
          : { ...r.source, repositoryId: r.repositoryId, revision: r.revision },
      ),
    );
    const { anyChart } = await this.multiSource.check(src.sources, where);
    const first = src.sources.find((r) => r.source.kind !== 'ref') ?? src.sources[0];
    return this.records.checkAndStore(
      {
        key: sourcesRenderKey(inputs, application, capabilities),
        repositoryId: null,
        repoUrl: first?.source.repoURL ?? '',
        revision: sourcesRevision(src.sources),
        path: first ? pathOf(first) : '',
        options: { sources: inputs, application, capabilities },
        renderer: anyChart ? 'helm' : 'plain',
        where,
      },
      () => this.multiSource.render(src.sources, application, capabilities, where, { record: !src.preview }),
    );
  }

  /** A chart source's provenance setting as part of a render's input; nothing when it has none (keys stay as they were). */
  private async provenanceInput(repoUrl: string): Promise<{ provenance?: string }> {
    const digest = await this.provenance.settingDigest(repoUrl);
    return digest === '' ? {} : { provenance: digest };
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
}

/** How errors name a source of a multi-source render. */
function shownSource(r: ResolvedSource): string {
  return 'version' in r
    ? `${r.source.repoURL} ${r.source.chart}@${r.version.version}`
    : `${r.source.repoURL}@${r.revision.slice(0, 12)}${r.source.kind === 'git' ? `:${r.source.path || '.'}` : ''}`;
}
