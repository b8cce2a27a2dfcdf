// The hub's render tools (kustomize, helm, the Helm repository client), set up once from the config.
import { Inject, Injectable, Logger } from '@nestjs/common';
import type { KubeObject } from '@flotilla/contract';
import {
  bundleDigest,
  ManifestError,
  type ApplicationSource,
  type Capabilities,
  type ChartVersion,
  type KustomizeRunner,
} from '@flotilla/manifests';
import {
  ChartRepositoryClient,
  KustomizeProcess,
  renderApplication,
  resolveHelmBinary,
  type HelmRunOptions,
  type RenderEnvironment,
} from '@flotilla/manifests/node';
import { preserveSopsKeyOrder } from '@flotilla/sops';
import { HUB_CONFIG, type HubConfig } from '../config/hub-config.js';
import { ChartProvenance } from '../sources/verification/chart-provenance.service.js';
import { ChartCredentialsService } from './chart-credentials.service.js';
import { RenderError } from './render-error.js';
import type { RenderApplication, Rendered } from './render-source.js';

/**
 * The kustomize runner, the helm binary and the Helm repository client every render uses, and
 * renderApplication (the code `flotilla render` runs) with them.
 */
@Injectable()
export class RenderTools {
  private readonly logger = new Logger(RenderTools.name);
  readonly kustomize: KustomizeRunner;
  private readonly helm: HelmRunOptions | null;
  private readonly charts: ChartRepositoryClient;

  constructor(
    chartCredentials: ChartCredentialsService,
    private readonly provenance: ChartProvenance,
    @Inject(HUB_CONFIG) config: HubConfig,
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
    this.charts = new ChartRepositoryClient({
      indexTtlMs: config.render.helmRepositoryCacheSeconds * 1000,
      timeoutMs: config.render.timeoutSeconds * 1000,
      maxBytes: 64 * 1024 * 1024,
      credentials: (url) => chartCredentials.forUrl(url),
    });
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
   * Renders `sources` through the same code as `flotilla render` (renderApplication) with the hub's
   * Helm, chart client and kustomize. A ManifestError becomes a RenderError whose message names files
   * as the repository does (the temporary `checkouts` taken out); no objects at all is the error `empty`.
   * Every chart package downloaded is judged by its repository's provenance setting first; `record:
   * false` (a preview, a plan) reads verdicts without recording any.
   */
  async renderThrough(
    application: RenderApplication,
    sources: ApplicationSource[],
    capabilities: Capabilities,
    repositories: RenderEnvironment['repositories'],
    checkouts: readonly string[],
    where: string,
    empty: string,
    judging: { record: boolean } = { record: true },
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
        {
          helm: this.helm,
          charts: this.charts,
          kustomize: this.kustomize,
          repositories,
          chartGate: this.provenance.gate(this.helm, judging),
        },
      );
      objects = rendered.objects.map((o) => preserveSopsKeyOrder(o));
    } catch (e) {
      if (!(e instanceof ManifestError)) throw e;
      let message = e.message;
      for (const dir of checkouts) message = message.replaceAll(`${dir}/`, '');
      throw new RenderError(e.code, message, where);
    }
    if (objects.length === 0) throw new RenderError('no-manifests', empty, where);
    return { digest: bundleDigest(objects), manifests: objects };
  }
}
