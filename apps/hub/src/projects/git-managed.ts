import { HubError } from '../common/hub-error.js';

/** Where a Git-managed object came from, as stored on its row. */
export interface GitSource {
  managedBy: string;
  sourceRepo: string | null;
  sourceFile: string | null;
  sourceCommit: string | null;
  sourceAuthor: string | null;
}

/** The `source` block of an API view: who manages the object and, for Git, where it lives. */
export function sourceView(row: GitSource) {
  return {
    managedBy: row.managedBy,
    ...(row.managedBy === 'git' && {
      repo: row.sourceRepo,
      file: row.sourceFile,
      commit: row.sourceCommit,
      author: row.sourceAuthor,
    }),
  };
}

/**
 * Objects reconciled from a fleet repository are changed in Git, not through the API: the refusal
 * names the repository file so the person knows where to make the change.
 */
export function refuseGitManaged(kind: string, name: string, row: GitSource): void {
  if (row.managedBy !== 'git') return;
  throw new HubError(
    409,
    'git-managed',
    `${kind} "${name}" is managed by Git: change ${row.sourceFile ?? '(unknown file)'} in ${row.sourceRepo ?? '(unknown repository)'} (commit ${(row.sourceCommit ?? '').slice(0, 12)}) instead`,
    row.sourceFile ?? undefined,
  );
}
