import { freePort } from './free-port.js';
import type { ProcessSupervisor, SupervisedProcess } from './process-supervisor.js';
import { waitFor } from './wait-for.js';
import { connect } from 'node:net';

/**
 * Serves every repository under `baseDir` read-only over the git protocol on 127.0.0.1, as a Git host
 * would (`git://127.0.0.1:<port>/<repo>`), so tests fetch through a real network protocol.
 */
export async function startGitDaemon(
  baseDir: string,
  supervisor: ProcessSupervisor,
  /** `push`: accept pushes (`--enable=receive-pack`), as a Git host would from a writer. */
  opts: { push?: boolean } = {},
): Promise<{ url: (repo: string) => string; proc: SupervisedProcess }> {
  const port = await freePort();
  const proc = supervisor.spawn('git-daemon', 'git', [
    'daemon',
    '--reuseaddr',
    '--export-all',
    ...(opts.push === true ? ['--enable=receive-pack'] : []),
    '--listen=127.0.0.1',
    `--port=${port}`,
    `--base-path=${baseDir}`,
    baseDir,
  ]);
  await waitFor(
    'git daemon to listen',
    () =>
      new Promise<true | undefined>((resolve) => {
        const socket = connect(port, '127.0.0.1', () => {
          socket.destroy();
          resolve(true);
        });
        socket.on('error', () => resolve(undefined));
      }),
    { timeoutMs: 10_000, intervalMs: 100 },
  );
  return { url: (repo) => `git://127.0.0.1:${port}/${repo}`, proc };
}
