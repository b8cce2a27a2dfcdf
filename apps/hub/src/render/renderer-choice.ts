// Which tool renders a directory of a repository: helm, kustomize, or none (plain YAML/JSON).
import { posix } from 'node:path';
import { kustomizationFileIn } from '@flotilla/manifests';
import type { RenderedBundle } from './render-source.js';

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
