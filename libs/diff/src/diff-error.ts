export type DiffErrorCode = 'INVALID_OBJECT' | 'INVALID_JSON_POINTER' | 'INVALID_JQ' | 'INVALID_RULE';

/** Bad input to the diff (an unusable rule or object), with the path of the offending input. */
export class DiffError extends Error {
  override readonly name = 'DiffError';

  constructor(
    readonly code: DiffErrorCode,
    message: string,
    /** Where the bad input is, e.g. `ignoreRules[0].jqPathExpressions[1]`. */
    readonly path: string,
  ) {
    super(`${path}: ${message}`);
  }
}
