import { spawn } from 'node:child_process';
import { connect } from 'node:net';
import { basename, dirname } from 'node:path';
import { freePort } from './free-port.js';

export interface TestGitDaemon {
  /** `git://127.0.0.1:<port>/<name>` for the served repository. */
  url: string;
  close(): Promise<void>;
}

/**
 * `git daemon` on 127.0.0.1 serving the one repository at `dir` (a checkout or a bare repository),
 * with push enabled (`--enable=receive-pack`) so the hub can push branches to it as to a Git host.
 * `close()` stops it by its PID.
 */
export async function startTestGitDaemon(dir: string): Promise<TestGitDaemon> {
  const port = await freePort();
  const child = spawn(
    'git',
    [
      'daemon',
      '--reuseaddr',
      '--export-all',
      '--enable=receive-pack',
      '--listen=127.0.0.1',
      `--port=${port}`,
      `--base-path=${dirname(dir)}`,
      // Only this repository is served, not its siblings in the temp dir.
      dir,
    ],
    { stdio: 'ignore' },
  );
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const close = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      await exited;
    }
  };
  for (let i = 0; ; i++) {
    const listening = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1', () => {
        socket.destroy();
        resolve(true);
      });
      socket.on('error', () => resolve(false));
    });
    if (listening) break;
    if (i >= 100 || child.exitCode !== null) {
      await close();
      throw new Error(`git daemon did not listen on 127.0.0.1:${port}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return { url: `git://127.0.0.1:${port}/${basename(dir)}`, close };
}
