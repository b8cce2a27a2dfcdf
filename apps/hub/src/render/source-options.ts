// A Git source's directory and renderer options, validated before anything is read.
import {
  parseHelmOptions,
  parseKustomizeOptions,
  safeSourcePath,
  type HelmOptions,
  type KustomizeOptions,
} from '@flotilla/manifests';
import { RenderError, translateManifestError } from './render-error.js';
import type { RenderSource } from './render-source.js';

export interface SourceOptions {
  /** The directory in the repository, '' for its root. */
  dir: string;
  kustomize: KustomizeOptions;
  helm: HelmOptions;
  /** Whether the source has helm options at all (then it is a chart, whatever the directory holds). */
  helmAsked: boolean;
}

/** Validates `spec.source`'s path, kustomize and helm options; a source may not have both renderers. */
export function parseSourceOptions(
  src: Pick<RenderSource, 'path' | 'kustomize' | 'helm'>,
  where: string,
): SourceOptions {
  const dir = translateManifestError(where, () => safeSourcePath(src.path));
  const kustomize = translateManifestError('spec.source.kustomize', () =>
    parseKustomizeOptions(src.kustomize, 'spec.source.kustomize'),
  );
  const helmAsked = src.helm !== undefined && src.helm !== null;
  const helm = translateManifestError('spec.source.helm', () =>
    parseHelmOptions(helmAsked ? src.helm : undefined, 'spec.source.helm'),
  );
  if (helmAsked && src.kustomize !== undefined && src.kustomize !== null) {
    throw new RenderError(
      'manifest-invalid-source',
      'spec.source: has both helm and kustomize; a source has one renderer',
      'spec.source',
    );
  }
  return { dir, kustomize, helm, helmAsked };
}
