/** Bad usage or unreadable input: exit 2 with one line on stderr. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}
