// The revert commit, written with real git in a scratch clone of the hub's mirror and pushed as a
// new branch; nothing here touches the mirror itself.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { simpleGit } from 'simple-git';
import { openGitAuth, type GitAuth } from '../../sources/git/git-credentials.js';
import { remoteGit, type FetchTimeouts } from '../../sources/git/remote-git.js';

/** The revert could not be written or pushed; `code` says which, the message what to do. */
export class RevertBranchError extends Error {
  override readonly name = 'RevertBranchError';
  constructor(
    readonly code: 'revert-conflict' | 'push-failed',
    message: string,
  ) {
    super(message);
  }
}

export interface RevertBranchInput {
  /** The bare mirror holding every commit involved. */
  mirrorDir: string;
  /** The commit the branch starts from, and the commits to revert (newest first). */
  head: string;
  commits: string[];
  branch: string;
  message: string;
  author: { name: string; email: string };
}

export interface RemoteAccess {
  url: string;
  auth: GitAuth;
  knownHostsFile: string;
  timeouts: FetchTimeouts;
}

/**
 * Writes one commit reverting `commits` on a branch from `head`, and pushes it to the remote as a
 * new branch (a branch of that name already there refuses the push: nothing is overwritten).
 * Returns the revert commit. The scratch clone is removed whatever happens.
 */
export async function pushRevertBranch(input: RevertBranchInput, remote: RemoteAccess): Promise<string> {
  const scratch = await mkdtemp(join(tmpdir(), 'flotilla-revert-'));
  try {
    const git = scratchGit(scratch, input.author);
    // --shared: the scratch borrows the mirror's objects instead of copying them.
    await git.raw(['clone', '--quiet', '--shared', '--no-checkout', input.mirrorDir, scratch]);
    await git.raw(['checkout', '--quiet', '-b', input.branch, input.head]);
    try {
      await git.raw(['revert', '--no-commit', ...input.commits]);
    } catch (e) {
      const conflicts = (await git.raw(['diff', '--name-only', '--diff-filter=U']))
        .split('\n')
        .filter(Boolean);
      throw new RevertBranchError(
        'revert-conflict',
        `the revert does not apply cleanly${conflicts.length > 0 ? ` (conflicts in ${conflicts.join(', ')})` : `: ${String(e)}`}; revert by hand: git revert ${input.commits.join(' ')}`,
      );
    }
    await git.raw(['commit', '--quiet', '--no-verify', '-m', input.message]);
    const revert = (await git.raw(['rev-parse', 'HEAD'])).trim();
    await pushRef(scratch, remote, [`${revert}:refs/heads/${input.branch}`]);
    return revert;
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

/** Deletes a branch this hub pushed (a pull request that could not be opened leaves no branch behind). */
export async function deleteRemoteBranch(branch: string, remote: RemoteAccess): Promise<void> {
  const scratch = await mkdtemp(join(tmpdir(), 'flotilla-revert-'));
  try {
    await simpleGit({ baseDir: scratch }).init();
    await pushRef(scratch, remote, [`:refs/heads/${branch}`]);
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

async function pushRef(dir: string, remote: RemoteAccess, refspecs: string[]): Promise<void> {
  const session = await openGitAuth(remote.auth, remote.knownHostsFile);
  try {
    await remoteGit(dir, ['push', '--porcelain', remote.url, ...refspecs], remote.timeouts, session.env);
  } catch (e) {
    const message = e instanceof Error ? e.message.trim().split('\n').slice(-3).join(' ') : String(e);
    throw new RevertBranchError('push-failed', `cannot push to ${remote.url}: ${message}`);
  } finally {
    await session.dispose();
  }
}

/**
 * Git in the scratch clone as the configured identity (given with `-c`: simple-git refuses to pass
 * git's own variables such as GIT_AUTHOR_NAME), with no signing or hooks.
 */
function scratchGit(dir: string, author: { name: string; email: string }) {
  const git = simpleGit({ baseDir: dir, timeout: { block: 120_000 } });
  const identity = [
    '-c',
    `user.name=${author.name}`,
    '-c',
    `user.email=${author.email}`,
    '-c',
    'commit.gpgsign=false',
  ];
  return { raw: (args: string[]) => git.raw([...identity, ...args]) };
}
