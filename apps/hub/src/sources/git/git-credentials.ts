import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** How the hub authenticates to a repository (decrypted only for the length of one git command). */
export type GitAuth =
  { type: 'https-token'; username: string; token: string } | { type: 'ssh-key'; privateKey: string };

export interface GitAuthSession {
  /** Variables to add to git's environment. */
  env: Record<string, string>;
  /** Removes the temporary askpass script or key file. */
  dispose(): Promise<void>;
}

// Answers git's "Username for ..." and "Password for ..." prompts from variables only this git
// process has; the token is never on a command line, in a URL, or in the mirror's config.
const ASKPASS = `#!/bin/sh
case "$1" in
  Username*) printf '%s\\n' "$FLOTILLA_GIT_USERNAME" ;;
  *) printf '%s\\n' "$FLOTILLA_GIT_PASSWORD" ;;
esac
`;

/**
 * Prepares one authenticated git run: an askpass script (HTTPS token) or a private key file mode
 * 0600 with GIT_SSH_COMMAND (SSH), in a fresh 0700 directory removed by dispose(). `knownHostsFile`
 * keeps the hosts' SSH keys (trust on first use, then checked).
 */
export async function openGitAuth(auth: GitAuth, knownHostsFile: string): Promise<GitAuthSession> {
  const dir = await mkdtemp(join(tmpdir(), 'flotilla-git-auth-'));
  await chmod(dir, 0o700);
  const dispose = () => rm(dir, { recursive: true, force: true });
  try {
    if (auth.type === 'https-token') {
      const script = join(dir, 'askpass.sh');
      await writeFile(script, ASKPASS, { mode: 0o700 });
      return {
        env: {
          GIT_ASKPASS: script,
          FLOTILLA_GIT_USERNAME: auth.username,
          FLOTILLA_GIT_PASSWORD: auth.token,
        },
        dispose,
      };
    }
    const keyFile = join(dir, 'id');
    // ssh refuses a key whose file others can read; and it wants the final newline.
    await writeFile(keyFile, auth.privateKey.endsWith('\n') ? auth.privateKey : `${auth.privateKey}\n`, {
      mode: 0o600,
    });
    const ssh = [
      'ssh',
      `-i ${shellQuote(keyFile)}`,
      '-o IdentitiesOnly=yes',
      '-o BatchMode=yes',
      '-o StrictHostKeyChecking=accept-new',
      `-o UserKnownHostsFile=${shellQuote(knownHostsFile)}`,
    ].join(' ');
    return { env: { GIT_SSH_COMMAND: ssh }, dispose };
  } catch (e) {
    await dispose();
    throw e;
  }
}

function shellQuote(s: string): string {
  return `'${s.replaceAll("'", `'\\''`)}'`;
}
