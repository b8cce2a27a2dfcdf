// What the hub asks a render for (a Git directory, a chart, a multi-source Application) and what it gets back.
import type { KubeObject } from '@flotilla/contract';
import type { Capabilities, ChartSource, ChartVersion, GitSource, RefSource } from '@flotilla/manifests';

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
  /** A preview: chart provenance verdicts are read, never recorded or audited. */
  preview?: boolean;
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
  /** A preview: chart provenance verdicts are read, never recorded or audited. */
  preview?: boolean;
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
  /** A preview: chart provenance verdicts are read, never recorded or audited. */
  preview?: boolean;
}

/**
 * The revision a multi-source target records: each source's commit or chart version, in spec order,
 * joined by commas (a commit of any of them is a new revision, as in Argo CD's `revisions`).
 */
export function sourcesRevision(sources: readonly ResolvedSource[]): string {
  return sources.map((r) => ('version' in r ? r.version.version : r.revision)).join(',');
}

/** What a target shows as a source's path: the directory, or a chart's name. */
export function pathOf(r: ResolvedSource): string {
  if ('version' in r) return r.source.chart;
  return r.source.kind === 'git' ? r.source.path || '.' : '';
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

/** What a renderer produces; the renderer is named by whoever chose it. */
export type Rendered = Omit<RenderedBundle, 'renderer'>;
