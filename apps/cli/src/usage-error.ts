/**
 * Bad usage or unreadable input: exit 2 with one line on stderr. `excerpt` (a YAML error's line with
 * a caret) is printed below it by the commands people type; the offline commands of CLI.md keep
 * their contract of one line.
 */
export class UsageError extends Error {
  override readonly name = 'UsageError';
  constructor(
    message: string,
    readonly excerpt?: string,
  ) {
    super(message);
  }

  /** The message, then the excerpt indented, as a person reads it on a terminal. */
  get withExcerpt(): string {
    return this.excerpt ? `${this.message}\n${this.excerpt.replace(/^/gm, '    ')}` : this.message;
  }
}
