/** Why a fleet repository is refused; stable codes so callers branch on them, never on the message. */
export type FleetErrorCode =
  | 'invalid-path'
  | 'invalid-yaml'
  | 'not-an-object'
  | 'unknown-api-version'
  | 'unknown-kind'
  | 'invalid-field'
  | 'invalid-schedule'
  | 'invalid-duration'
  | 'invalid-time-zone'
  | 'invalid-selector'
  | 'invalid-expression'
  | 'duplicate-name'
  | 'dangling-reference'
  | 'repo-not-permitted'
  | 'destination-not-permitted'
  | 'label-conflict'
  | 'invalid-lua'
  | 'too-large';

/**
 * One problem in a fleet repository, located the way a reviewer reads a pull request: the file,
 * the document inside it (0-based, as `---` separates them) and its line (1-based), the object
 * (kind and name, when known) and the field path inside the document (`spec.steps[1].bakeTime`).
 */
export interface FleetError {
  code: FleetErrorCode;
  file: string;
  document: number;
  line: number;
  kind: string | null;
  name: string | null;
  path: string;
  message: string;
  /** A YAML syntax error's offending line with a caret under the column. */
  excerpt?: string;
}

/** `file:line: kind/name: path: message`, the form editors and CI logs turn into links. */
export function formatFleetError(e: FleetError): string {
  const object = e.kind === null ? '-' : `${e.kind}/${e.name ?? '?'}`;
  return `${e.file}:${e.line}: ${object}: ${e.path}: ${e.message}`;
}

/** Sorts errors by file, document, line, then path, so the same repository always reads the same. */
export function compareFleetErrors(a: FleetError, b: FleetError): number {
  return (
    cmp(a.file, b.file) ||
    a.document - b.document ||
    a.line - b.line ||
    cmp(a.path, b.path) ||
    cmp(a.message, b.message)
  );
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
