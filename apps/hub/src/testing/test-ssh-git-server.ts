import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { freePort } from './free-port.js';

const SSHD = '/usr/sbin/sshd';

/** Whether this machine can run the SSH Git server (OpenSSH's sshd installed). */
export const sshdAvailable = existsSync(SSHD);

export interface TestSshGitServer {
  /** `ssh://<user>@127.0.0.1:<port><repoDir>` */
  url: string;
  /** The OpenSSH private key sshd accepts (a deploy key). */
  privateKey: string;
  close(): Promise<void>;
}

/**
 * OpenSSH's sshd on 127.0.0.1 and a free port, accepting one freshly generated key for the current
 * user and nothing else (no passwords): what a Git host with a deploy key looks like to a client.
 * Git runs over it as usual (`git-upload-pack` through the user's shell).
 */
export async function startTestSshGitServer(repoDir: string): Promise<TestSshGitServer> {
  const dir = mkdtempSync(join(tmpdir(), 'flotilla-sshd-'));
  const keygen = (file: string) =>
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', file], { stdio: 'ignore' });
  keygen(join(dir, 'host_key'));
  keygen(join(dir, 'client_key'));
  writeFileSync(join(dir, 'authorized_keys'), readFileSync(join(dir, 'client_key.pub')));
  // sshd (as root) insists on its privilege-separation directory.
  if (process.getuid?.() === 0) mkdirSync('/run/sshd', { recursive: true });
  const port = await freePort();
  const user = userInfo().username;
  writeFileSync(
    join(dir, 'sshd_config'),
    [
      `Port ${port}`,
      'ListenAddress 127.0.0.1',
      `HostKey ${join(dir, 'host_key')}`,
      `AuthorizedKeysFile ${join(dir, 'authorized_keys')}`,
      `PidFile ${join(dir, 'sshd.pid')}`,
      'UsePAM no',
      'StrictModes no',
      'PasswordAuthentication no',
      'KbdInteractiveAuthentication no',
      'PubkeyAuthentication yes',
      'PermitRootLogin prohibit-password',
      `AllowUsers ${user}`,
      'LogLevel ERROR',
      '',
    ].join('\n'),
  );
  const sshd: ChildProcess = spawn(SSHD, ['-D', '-e', '-f', join(dir, 'sshd_config')], { stdio: 'ignore' });
  const cleanup = () => {
    sshd.kill('SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await waitForPort(port, 10_000);
  } catch (e) {
    cleanup();
    throw e;
  }
  return {
    url: `ssh://${user}@127.0.0.1:${port}${repoDir}`,
    privateKey: readFileSync(join(dir, 'client_key'), 'utf8'),
    close: async () => {
      const exited = new Promise((done) => sshd.once('exit', done));
      cleanup();
      await exited;
    },
  };
}

async function waitForPort(port: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const open = await new Promise<boolean>((done) => {
      const socket = createConnection({ host: '127.0.0.1', port }, () => {
        socket.end();
        done(true);
      });
      socket.on('error', () => done(false));
    });
    if (open) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`sshd did not listen on 127.0.0.1:${port} within ${timeoutMs} ms`);
}
