/**
 * What went wrong, as a stable code callers can branch on (never match on the message). The same
 * strings the hub's API answers with: `invalid-appset` is any ApplicationSet document (a generator's
 * shape included) that does not parse, `path` saying where; a submission is refused with it as it is.
 */
export type GeneratorErrorCode =
  | 'invalid-appset'
  | 'unknown-generator'
  | 'invalid-selector'
  | 'invalid-params'
  | 'template-parse'
  | 'template-execute'
  | 'duplicate-key'
  | 'non-unique-merge-key'
  | 'repository'
  | 'file-parse';

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
