/**
 * `invalid-object`: a desired or live input that is not a Kubernetes object; `invalid-ignore-rule`:
 * an ignore rule (its kind, a JSON pointer or a jq expression) that cannot be used, the same code the
 * hub answers a template's `ignoreDifferences` with. The path says which part of the rule.
 */
export type DiffErrorCode = 'invalid-object' | 'invalid-ignore-rule';

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
