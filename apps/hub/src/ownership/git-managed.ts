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
