/** What went wrong, as a stable code callers can branch on (never match on the message). */
export type GeneratorErrorCode =
  | 'INVALID_APPLICATIONSET'
  | 'UNKNOWN_GENERATOR'
  | 'INVALID_GENERATOR'
  | 'INVALID_SELECTOR'
  | 'INVALID_PARAMS'
  | 'TEMPLATE_PARSE'
  | 'TEMPLATE_EXECUTE'
  | 'DUPLICATE_KEY'
  | 'NON_UNIQUE_MERGE_KEY'
  | 'REPOSITORY'
  | 'FILE_PARSE';

/**
 * A generator or template failure. `path` locates the offending input: a field path in the
 * ApplicationSet (`spec.generators[1].matrix.generators[0]`), optionally followed by a repository file.
 */
export class GeneratorError extends Error {
  override readonly name = 'GeneratorError';
  readonly code: GeneratorErrorCode;
  readonly path?: string;
  /** The message without the path prefix. */
  readonly detail: string;

  constructor(code: GeneratorErrorCode, detail: string, path?: string) {
    super(path ? `${path}: ${detail}` : detail);
    this.code = code;
    this.detail = detail;
    if (path !== undefined) this.path = path;
  }

  /** Gives an error that has no path yet the path of the input being processed. */
  static wrap(err: unknown, code: GeneratorErrorCode, path: string): GeneratorError {
    if (err instanceof GeneratorError)
      return err.path === undefined ? new GeneratorError(err.code, err.detail, path) : err;
    return new GeneratorError(code, err instanceof Error ? err.message : String(err), path);
  }
}
