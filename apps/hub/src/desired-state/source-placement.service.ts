// Where each generated target's bundle comes from: its sources checked, resolved to commits or chart versions, and rendered.
import { Injectable } from '@nestjs/common';
import type { GeneratedTarget } from '@flotilla/generators';
import {
  canonicalJson,
  helmApplicationInputs,
  ManifestError,
  parseApplicationSources,
  parseHelmOptions,
  type ApplicationSource,
  type Capabilities,
  type HelmOptions,
} from '@flotilla/manifests';
import type { ProjectGate } from '../projects/project-policy.service.js';
import {
  pathOf,
  sourcesRevision,
  type RenderApplication,
  type ResolvedSource,
} from '../render/render-source.js';
import { chartRepositoryRefusal, multiSourceRefusal, unrenderedSourceField } from './appset-document.js';
import { ExpansionError } from './expansion-error.js';
import type { DesiredTarget } from './expansion-plan.js';
import { ExpansionRenders, type RenderScope } from './expansion-renders.service.js';
import { ExpansionRepositories, type RepositoryScope } from './expansion-repositories.service.js';

/** Where a target's bundle comes from and at which revision, as its row stores it. */
export type TargetPlacement = Pick<
  DesiredTarget,
  'repoUrl' | 'sourcePath' | 'targetRevision' | 'desiredRevision' | 'sources'
>;

/** A placed target: its source, its bundle's render (started, awaited later), and whether that render reads its cluster's capabilities. */
export interface PlacedTarget {
  placed: TargetPlacement;
  rendered: Promise<string>;
  readsCapabilities: boolean;
}

/** A generated target to place, with what its project and a chart see of its destination. */
export interface TargetToPlace {
  target: GeneratedTarget;
  /** `targets[i] (name)`: where its errors point. */
  at: string;
  gate: ProjectGate;
  projectCluster: { name: string; labels: Record<string, string> };
  namespace: string;
  capabilities: Capabilities;
}

/** What the placements of one expansion share: its repositories, Git reads and renders. */
export type PlacementScope = RepositoryScope & RenderScope;

/** A target's one source (`spec.source`), checked, with what its render reads besides the source. */
interface SingleSource {
  source: GeneratedTarget['application']['spec']['source'];
  helm: unknown;
  application: RenderApplication;
  /** What a chart's render reads besides its source: the Application and the cluster's capabilities. */
  appInputs: string;
}

@Injectable()
export class SourcePlacement {
  constructor(
    private readonly repositories: ExpansionRepositories,
    private readonly renders: ExpansionRenders,
  ) {}

  /** Checks the target's source(s), resolves them and starts (or shares) its bundle's render. */
  async place(t: TargetToPlace, scope: PlacementScope): Promise<PlacedTarget> {
    const multi = (t.target.application.spec as Record<string, unknown>)['sources'];
    if (multi !== undefined && multi !== null) return this.placeSources(t, scope);
    const single = singleSourceOf(t);
    const chartName = typeof single.source['chart'] === 'string' ? single.source['chart'] : '';
    if (chartName !== '') return this.placeChart(t, single, chartName, scope);
    return this.placeGitPath(t, single, scope);
  }

  /** A chart from a Helm repository, at the version its constraint resolves to in this expansion. */
  private async placeChart(
    t: TargetToPlace,
    { source, helm, application, appInputs }: SingleSource,
    chartName: string,
    scope: PlacementScope,
  ): Promise<PlacedTarget> {
    const refused = chartRepositoryRefusal(source.repoURL, chartName);
    if (refused) throw new ExpansionError('invalid-target', refused, `${t.at}.spec.source.repoURL`);
    if (source.path) {
      throw new ExpansionError(
        'invalid-target',
        'a chart from a Helm repository has no path (give chart or path, not both)',
        `${t.at}.spec.source.path`,
      );
    }
    const targetRevision = source.targetRevision || '*';
    const version = await this.renders.chartVersion(
      scope,
      source.repoURL,
      chartName,
      targetRevision,
      `${t.at}.spec.source.targetRevision`,
    );
    const key = canonicalJson([
      'chart',
      source.repoURL,
      chartName,
      version.version,
      version.digest ?? version.url,
      helm ?? null,
      appInputs,
    ]);
    const chart = { repoUrl: source.repoURL, chart: chartName, version, helm, application };
    const rendered = this.renders.once(scope, key, () =>
      this.renders.renderChart({ ...chart, capabilities: t.capabilities, preview: !scope.register }, t.at),
    );
    return {
      placed: {
        repoUrl: source.repoURL,
        sourcePath: chartName,
        targetRevision,
        desiredRevision: version.version,
        sources: null,
      },
      rendered,
      readsCapabilities: true,
    };
  }

  /** A path of a Git repository at the commit its targetRevision means in this expansion. */
  private async placeGitPath(
    t: TargetToPlace,
    { source, helm, application, appInputs }: SingleSource,
    scope: PlacementScope,
  ): Promise<PlacedTarget> {
    const repo = await this.repositories.prepared(source.repoURL, scope);
    const targetRevision = source.targetRevision || 'HEAD';
    const sha = await this.repositories.releasableRevision(
      scope,
      repo,
      targetRevision,
      `${t.at}.spec.source.targetRevision`,
    );
    const path = source.path ?? '';
    const kustomize = source['kustomize'];
    const chart = await this.renders.rendersAsChart(scope, {
      repositoryId: repo.id,
      revision: sha,
      path,
      kustomize,
      helm,
    });
    // A chart's render reads its Application and cluster; any other render is shared by every target.
    const key = `${sharedRenderOf(repo.id, sha, path, source)}${chart ? `\0${appInputs}` : ''}`;
    const src = {
      repositoryId: repo.id,
      repoUrl: repo.url,
      revision: sha,
      path,
      kustomize,
      helm,
      application,
    };
    const rendered = this.renders.once(scope, key, () =>
      this.renders.renderGitPath(
        { ...src, capabilities: t.capabilities, preview: !scope.register },
        `${t.at}.spec.source.path`,
      ),
    );
    return {
      placed: { repoUrl: repo.url, sourcePath: path, targetRevision, desiredRevision: sha, sources: null },
      rendered,
      readsCapabilities: chart,
    };
  }

  /**
   * A multi-source target (`spec.sources`): every source checked as the submission did (now with its
   * parameters filled in), each Git repository a source or a `ref:` names registered, fetched and
   * resolved like a single source's (so a commit to a values repository re-expands the appset),
   * each chart's version resolved once per expansion; then one render per distinct resolved input.
   */
  private async placeSources(t: TargetToPlace, scope: PlacementScope): Promise<PlacedTarget> {
    const resolved = await this.resolveSources(t, parsedSources(t), scope);
    const application = applicationOf(t.target);
    const key = canonicalJson([
      'sources',
      resolved.map((r) =>
        'version' in r
          ? [r.source, r.version.version, r.version.digest ?? r.version.url]
          : [r.source, r.repositoryId, r.revision],
      ),
      application,
      t.capabilities,
    ]);
    const rendered = this.renders.once(scope, key, () =>
      this.renders.renderSources(
        { sources: resolved, application, capabilities: t.capabilities, preview: !scope.register },
        t.at,
      ),
    );
    return { placed: multiSourcePlacement(t.at, resolved), rendered, readsCapabilities: true };
  }

  /** Each source at what it means in this expansion: a chart at a version, a Git source at a commit. */
  private async resolveSources(
    t: TargetToPlace,
    parsed: ApplicationSource[],
    scope: PlacementScope,
  ): Promise<ResolvedSource[]> {
    const resolved: ResolvedSource[] = [];
    for (const [i, s] of parsed.entries()) {
      const field = `${t.at}.spec.sources[${i}]`;
      const refused = t.gate.checkTarget(
        t.at,
        s.repoURL,
        t.projectCluster,
        t.namespace,
        `spec.sources[${i}]`,
      );
      if (refused) throw new ExpansionError(refused.code, refused.message, refused.path);
      if (s.kind === 'chart') {
        const refused = chartRepositoryRefusal(s.repoURL, s.chart);
        if (refused) throw new ExpansionError('invalid-target', refused, `${field}.repoURL`);
        const version = await this.renders.chartVersion(
          scope,
          s.repoURL,
          s.chart,
          s.targetRevision || '*',
          `${field}.targetRevision`,
        );
        resolved.push({ source: s, version });
        continue;
      }
      // The one repository-URL check of the hub, registration and first fetch: as for one source.
      const repo = await this.repositories.prepared(s.repoURL, scope);
      const sha = await this.repositories.releasableRevision(
        scope,
        repo,
        s.targetRevision || 'HEAD',
        `${field}.targetRevision`,
      );
      resolved.push({ source: s, repositoryId: repo.id, revision: sha });
    }
    return resolved;
  }
}

/** The target's `spec.source`, checked as the submission checks a literal one, and its Helm inputs. */
function singleSourceOf(t: TargetToPlace): SingleSource {
  const { at } = t;
  const source = t.target.application.spec.source as SingleSource['source'] | undefined;
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
    throw new ExpansionError('invalid-target', 'spec.source.repoURL is empty', `${at}.spec.source.repoURL`);
  const refused = t.gate.checkTarget(at, source.repoURL, t.projectCluster, t.namespace);
  if (refused) throw new ExpansionError(refused.code, refused.message, refused.path);
  const helm = source['helm'];
  let helmOptions: HelmOptions;
  try {
    helmOptions = parseHelmOptions(helm, `${at}.spec.source.helm`);
  } catch (e) {
    if (e instanceof ManifestError) throw new ExpansionError('invalid-helm-options', e.message, e.file);
    throw e;
  }
  const application = applicationOf(t.target);
  const appInputs = canonicalJson([helmApplicationInputs(helmOptions, application), t.capabilities]);
  return { source, helm, application, appInputs };
}

/** The target's `spec.sources`: refused fields first, then parsed as the submission parses them. */
function parsedSources(t: TargetToPlace): ApplicationSource[] {
  const spec = t.target.application.spec as Record<string, unknown>;
  const raw = Array.isArray(spec['sources']) ? (spec['sources'] as unknown[]) : [];
  raw.forEach((item, i) => {
    if (typeof item !== 'object' || item === null) return;
    const refused = multiSourceRefusal(item as Record<string, unknown>);
    if (refused)
      throw new ExpansionError('unsupported-source', refused[1], `${t.at}.spec.sources[${i}].${refused[0]}`);
  });
  try {
    // Field paths relative to the Application, so that targets with the same sources share a render.
    return parseApplicationSources({ sources: spec['sources'] }, 'spec');
  } catch (e) {
    if (!(e instanceof ManifestError)) throw e;
    // Like a submission's refusal: the target as a whole, except helm options' own code.
    throw new ExpansionError(
      e.code === 'invalid-helm-options' ? e.code : 'invalid-target',
      e.message,
      `${t.at}.${e.file}`,
    );
  }
}

/** What a multi-source target's row records: its first non-ref source, and every source with its revision. */
function multiSourcePlacement(at: string, resolved: ResolvedSource[]): TargetPlacement {
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
  };
}

/**
 * Which targets of one expansion share a render (an in-memory key, not render/'s stored identity of a
 * render, renderKey): the commit and path, plus every other source field (Kustomize or Helm options),
 * so targets that differ only in generator parameters share one render while a per-target overlay
 * gets its own.
 */
function sharedRenderOf(repositoryId: string, sha: string, path: string, source: object): string {
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
