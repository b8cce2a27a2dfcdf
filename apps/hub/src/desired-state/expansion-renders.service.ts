// The renders of one expansion: each chart version resolved once, each distinct input rendered once, errors named by field.
import { Injectable } from '@nestjs/common';
import { canonicalJson, type ChartVersion } from '@flotilla/manifests';
import { HubMetrics } from '../metrics/hub-metrics.service.js';
import { RenderService } from '../render/render.service.js';
import { RenderError } from '../render/render-error.js';
import {
  type ChartRenderSource,
  type MultiSourceRender,
  type RenderSource,
} from '../render/render-source.js';
import { ExpansionError } from './expansion-error.js';

/** What the renders of one expansion share, so that no question is asked twice. */
export interface RenderScope {
  /** (repository, chart, constraint) → the version every target of the expansion gets. */
  chartVersions: Map<string, Promise<ChartVersion>>;
  /** A render's input → its bundle's digest. */
  renders: Map<string, Promise<string>>;
  /** (repository, commit, path, options) → whether that path renders as a chart. */
  charts: Map<string, Promise<boolean>>;
}

export function newRenderScope(): RenderScope {
  return { chartVersions: new Map(), renders: new Map(), charts: new Map() };
}

@Injectable()
export class ExpansionRenders {
  constructor(
    private readonly render: RenderService,
    private readonly metrics: HubMetrics,
  ) {}

  /**
   * The digest of the render `key` names, started by `start` only the first time: one render per
   * distinct input, however many targets share it (1,000 clusters, one render).
   */
  once(scope: RenderScope, key: string, start: () => Promise<string>): Promise<string> {
    let digest = scope.renders.get(key);
    if (!digest) {
      this.metrics.renders.inc();
      digest = start();
      // Awaited later, in target order; this only keeps a failure from counting as unhandled
      // while the expansion goes on.
      digest.catch(() => undefined);
      scope.renders.set(key, digest);
    }
    return digest;
  }

  /**
   * The version a chart's constraint resolves to, asked once per (repository, chart, constraint) in
   * an expansion: every target of it gets the same version, even if the index changes meanwhile.
   */
  chartVersion(
    scope: RenderScope,
    repoUrl: string,
    chart: string,
    targetRevision: string,
    /** The targetRevision field, for errors. */
    field: string,
  ): Promise<ChartVersion> {
    const key = `${repoUrl}\0${chart}\0${targetRevision}`;
    let version = scope.chartVersions.get(key);
    if (!version) {
      version = this.render.resolveChart(repoUrl, chart, targetRevision).catch((e: unknown) => {
        if (e instanceof RenderError) {
          throw new ExpansionError(e.code, e.message, field);
        }
        throw e;
      });
      scope.chartVersions.set(key, version);
    }
    return version;
  }

  /** Whether a Git path renders as a chart, asked once per (commit, path, options). */
  rendersAsChart(
    scope: RenderScope,
    src: Pick<RenderSource, 'repositoryId' | 'revision' | 'path' | 'kustomize' | 'helm'>,
  ): Promise<boolean> {
    const options = canonicalJson([src.helm ?? null, src.kustomize ?? null]);
    const key = `${src.repositoryId}\0${src.revision}\0${src.path}\0${options}`;
    let isChart = scope.charts.get(key);
    if (!isChart) {
      isChart = this.render.rendersAsChart(src);
      scope.charts.set(key, isChart);
    }
    return isChart;
  }

  /** A Git path's bundle; `at` names the path field for errors. */
  async renderGitPath(src: RenderSource, at: string): Promise<string> {
    try {
      return await this.render.render(src);
    } catch (e) {
      if (e instanceof RenderError) throw new ExpansionError(e.code, e.message, `${at}: ${e.path}`);
      throw e;
    }
  }

  /** A Helm repository chart's bundle; `at` names the target for errors. */
  async renderChart(src: ChartRenderSource, at: string): Promise<string> {
    try {
      return (await this.render.renderChartBundle(src)).digest;
    } catch (e) {
      if (e instanceof RenderError) throw new ExpansionError(e.code, e.message, `${at}.spec.source.chart`);
      throw e;
    }
  }

  /** A multi-source target's bundle; `at` names the target for errors. */
  renderSources(src: MultiSourceRender, at: string): Promise<string> {
    return this.render
      .renderSourcesBundle(src)
      .then((b) => b.digest)
      .catch((e: unknown) => {
        if (e instanceof RenderError)
          throw new ExpansionError(e.code, e.message, `${at}.spec.sources: ${e.path}`);
        throw e;
      });
  }
}
