export type ManifestErrorCode =
  | 'INVALID_YAML'
  | 'NOT_AN_OBJECT'
  | 'MISSING_FIELD'
  | 'DUPLICATE_OBJECT'
  | 'TOO_LARGE'
  | 'TOO_DEEP'
  | 'NO_MANIFESTS'
  | 'UNSAFE_PATH'
  | 'REMOTE_BASE'
  | 'INVALID_KUSTOMIZATION'
  | 'INVALID_KUSTOMIZE_OPTIONS'
  | 'INVALID_HELM_OPTIONS'
  | 'INVALID_SOURCE'
  | 'CHART_NOT_FOUND'
  | 'MISSING_VALUE_FILE'
  | 'HELM_FAILED';

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
