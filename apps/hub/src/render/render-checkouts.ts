// Temporary checkouts of commits for the tools that need a working tree (kustomize, helm), bounded in size.
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkTreeEntries, type TreeEntry } from '@flotilla/manifests';
import type { GitMirrors } from '../sources/git/git-mirror.js';
import { readGitAsync, translateManifestError } from './render-error.js';

/** The most a render checks out of one commit. */
export const MAX_CHECKOUT_BYTES = 256 * 1024 * 1024;

/** Refuses a commit to check out that holds a symlink out of it or is larger than MAX_CHECKOUT_BYTES. */
export function checkCheckoutSize(entries: readonly TreeEntry[], where: string): void {
  translateManifestError(where, () =>
    checkTreeEntries(entries, { maxFileBytes: Number.POSITIVE_INFINITY, maxTreeBytes: MAX_CHECKOUT_BYTES }),
  );
}

/** Runs `fn` in a new temporary directory, removed afterwards whatever happens. */
export async function inRenderWorkspace<T>(fn: (work: string) => Promise<T>): Promise<T> {
  const work = await mkdtemp(join(tmpdir(), 'flotilla-render-'));
  try {
    return await fn(work);
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

/** Writes the commit's files into the new directory `<work>/<name>` and returns its path. */
export async function checkOutInto(
  mirrors: GitMirrors,
  work: string,
  name: string,
  commit: { repositoryId: string; revision: string },
  where: string,
): Promise<string> {
  const root = join(work, name);
  await mkdir(root);
  await readGitAsync(where, () => mirrors.checkout(commit.repositoryId, commit.revision, root));
  return root;
}
