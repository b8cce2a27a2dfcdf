// Commit signatures checked by git itself, against only the keys a repository allows: an SSH
// allowed-signers file and a GPG keyring written to a private temp dir for one call, then removed.
import { execFile } from 'node:child_process';
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GIT_ENV } from '../git/git-environment.js';
import { parseSignatureLog, SIGNATURE_LOG_FORMAT, type CommitSignature } from './commit-signatures.js';

/** The keys a repository allows, as stored: git's allowed-signers text and an armored GPG keyring. */
export interface AllowedKeys {
  allowedSigners: string;
  gpgKeyring: string;
}

/** Which commits to judge: one commit, or every commit reachable from `commit` and not from `since`. */
export interface CommitRange {
  commit: string;
  since?: string;
}

export class CommitVerifierError extends Error {
  override readonly name = 'CommitVerifierError';
}

const TIMEOUT_MS = 60_000;
/** A strict range longer than this is refused rather than verified for minutes. */
export const MAX_RANGE_COMMITS = 10_000;

/**
 * Runs `git log --format=%G?…` in a repository with `gpg.ssh.allowedSignersFile` pointing at the
 * repository's allowed signers and GNUPGHOME at a keyring holding only its GPG keys (trust-model
 * always: being in the keyring is what "allowed" means). Nothing of the hub's own git or gpg
 * configuration takes part: a key the hub's user trusts is not a key the repository allows.
 */
export async function commitSignatures(
  repoDir: string,
  range: CommitRange,
  keys: AllowedKeys,
): Promise<CommitSignature[]> {
  const dir = await mkdtemp(join(tmpdir(), 'flotilla-verify-'));
  try {
    await chmod(dir, 0o700);
    const signers = join(dir, 'allowed_signers');
    await writeFile(signers, keys.allowedSigners, { mode: 0o600 });
    const gnupgHome = join(dir, 'gnupg');
    await mkdir(gnupgHome, { mode: 0o700 });
    await writeFile(join(gnupgHome, 'gpg.conf'), 'trust-model always\n', { mode: 0o600 });
    const env = {
      ...process.env,
      ...GIT_ENV,
      GNUPGHOME: gnupgHome,
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_CONFIG_GLOBAL: '/dev/null',
    };
    if (keys.gpgKeyring.trim() !== '')
      await run('gpg', ['--batch', '--quiet', '--import'], env, keys.gpgKeyring);
    const git = ['-C', repoDir, '-c', `gpg.ssh.allowedSignersFile=${signers}`, 'log'];
    const format = `--format=${SIGNATURE_LOG_FORMAT}`;
    if (range.since) {
      const out = await run(
        'git',
        [...git, format, `--max-count=${MAX_RANGE_COMMITS + 1}`, range.commit, '--not', range.since, '--'],
        env,
      );
      const list = parseSignatureLog(out);
      if (list.length > MAX_RANGE_COMMITS)
        throw new CommitVerifierError(
          `more than ${MAX_RANGE_COMMITS} commits since the last verified one ${range.since.slice(0, 12)}`,
        );
      if (list.length > 0) return list;
    }
    return parseSignatureLog(await run('git', [...git, format, '--max-count=1', range.commit, '--'], env));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** GPG keys of an armored keyring, by fingerprint (imported into a throwaway GNUPGHOME); throws if none. */
export async function gpgFingerprints(keyring: string): Promise<string[]> {
  const dir = await mkdtemp(join(tmpdir(), 'flotilla-gpg-'));
  try {
    await chmod(dir, 0o700);
    const out = await run(
      'gpg',
      ['--batch', '--with-colons', '--import-options', 'show-only', '--import'],
      { ...process.env, GNUPGHOME: dir },
      keyring,
    );
    const fingerprints: string[] = [];
    let primary = false;
    for (const line of out.split('\n')) {
      const fields = line.split(':');
      if (fields[0] === 'pub') primary = true;
      else if (fields[0] === 'sub') primary = false;
      else if (fields[0] === 'fpr' && primary) {
        fingerprints.push(fields[9]!);
        primary = false;
      }
    }
    if (fingerprints.length === 0) throw new CommitVerifierError('holds no public key');
    return fingerprints;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** Whether `ancestor` is an ancestor of (or equal to) `commit` in the repository. */
export async function isAncestor(repoDir: string, ancestor: string, commit: string): Promise<boolean> {
  try {
    await run('git', ['-C', repoDir, 'merge-base', '--is-ancestor', ancestor, commit], {
      ...process.env,
      ...GIT_ENV,
    });
    return true;
  } catch {
    return false;
  }
}

function run(file: string, args: string[], env: NodeJS.ProcessEnv, input?: string): Promise<string> {
  return new Promise((done, fail) => {
    const child = execFile(
      file,
      args,
      { env, timeout: TIMEOUT_MS, maxBuffer: 64 * 1024 * 1024, encoding: 'utf8' },
      (error, stdout, stderr) => {
        if (error) fail(new CommitVerifierError(`${file} failed: ${stderr.trim() || error.message}`));
        else done(stdout);
      },
    );
    // A child that exits without reading its input (merge-base, a failing gpg) closes the pipe:
    // its exit status and stderr tell what happened, not the EPIPE of writing to it.
    child.stdin?.on('error', () => undefined);
    child.stdin?.end(input ?? '');
  });
}
