/** Why a sync window was refused; stable codes so callers branch on them, never on the message. */
export type WindowErrorCode =
  | 'invalid-windows'
  | 'invalid-kind'
  | 'invalid-schedule'
  | 'invalid-duration'
  | 'invalid-time-zone'
  | 'invalid-field';

/**
 * A sync window that cannot be evaluated. `index` is the window's position in its list and `path`
 * names the offending field (`[2].schedule`), so a person can find it in the file they wrote.
 */
export class WindowError extends Error {
  override readonly name = 'WindowError';

  constructor(
    readonly code: WindowErrorCode,
    readonly index: number | null,
    readonly path: string,
    detail: string,
  ) {
    super(index === null ? `sync windows: ${detail}` : `sync window ${index} (${path}): ${detail}`);
  }
}
