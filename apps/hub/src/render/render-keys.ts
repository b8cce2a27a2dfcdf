// The identity of each kind of render: the same key must always give the same digest.
import { createHash } from 'node:crypto';
import {
  canonicalJson,
  type Capabilities,
  type ChartVersion,
  type HelmOptions,
  type KustomizeOptions,
} from '@flotilla/manifests';
import type { RenderApplication } from './render-source.js';

function keyOf(parts: unknown[]): string {
  return createHash('sha256').update(canonicalJson(parts)).digest('hex');
}

/** The identity of a render: the same key must always give the same digest. */
export function renderKey(
  repositoryId: string,
  revision: string,
  dir: string,
  options: KustomizeOptions,
): string {
  return keyOf([repositoryId, revision, dir, options]);
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
  return keyOf(['helm', repositoryId, revision, dir, helm, application, capabilities]);
}

/**
 * The identity of a render of a chart from a Helm repository: the chart at its version and package
 * (its digest, or its URL when the index gives none), its options, Application and capabilities,
 * and its repository's provenance setting (its digest; '' for none leaves the key as it always was).
 */
export function chartRenderKey(
  repoUrl: string,
  chart: string,
  version: ChartVersion,
  helm: HelmOptions,
  application: RenderApplication,
  capabilities: Capabilities,
  provenance = '',
): string {
  return keyOf([
    'chart',
    repoUrl,
    chart,
    version.version,
    version.digest ?? version.url,
    helm,
    application,
    capabilities,
    ...(provenance === '' ? [] : [provenance]),
  ]);
}

/** The identity of a multi-source render: every source at what it resolved to, Application, capabilities. */
export function sourcesRenderKey(
  inputs: readonly unknown[],
  application: RenderApplication,
  capabilities: Capabilities,
): string {
  return keyOf(['sources', inputs, application, capabilities]);
}
