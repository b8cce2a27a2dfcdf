/**
 * Why a manifest or source is refused. These are the strings the hub's API and the render records
 * show as they are: `manifest-…` names a problem this lib found in what the repository holds;
 * `no-manifests` and `invalid-helm-options` are spelt as the hub's own refusals of the same thing.
 */
export type ManifestErrorCode =
  | 'manifest-invalid-yaml'
  | 'manifest-not-an-object'
  | 'manifest-missing-field'
  | 'manifest-duplicate-object'
  | 'manifest-too-large'
  | 'manifest-too-deep'
  | 'no-manifests'
  | 'manifest-unsafe-path'
  | 'manifest-remote-base'
  | 'manifest-invalid-kustomization'
  | 'manifest-invalid-kustomize-options'
  | 'invalid-helm-options'
  | 'manifest-invalid-source'
  | 'manifest-chart-not-found'
  | 'manifest-missing-value-file'
  | 'manifest-helm-failed'
  /** A chart package whose provenance its repository's setting refuses (hub: Helm provenance). */
  | 'chart-unverified';

/** A manifest that cannot be used, with the file (and line where known) a person must fix. */
export class ManifestError extends Error {
  override readonly name = 'ManifestError';
  constructor(
    readonly code: ManifestErrorCode,
    readonly file: string,
    message: string,
    readonly line?: number,
  ) {
    super(`${file}${line ? `:${line}` : ''}: ${message}`);
  }
}
