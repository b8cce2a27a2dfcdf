// Runs the `git` commands that talk to a remote (fetch, ls-remote) under fetch timeouts, so a stuck
// remote frees its worker and a slow one that keeps moving runs on.
import { spawn } from 'node:child_process';
import { GIT_ENV, inheritedEnv } from './git-environment.js';

/** How long a fetch may wait: for the remote's first byte, between two bytes, and in all. */
export interface FetchTimeouts {
  connectMs: number;
  idleMs: number;
  maxMs: number;
}

export const DEFAULT_FETCH_TIMEOUTS: FetchTimeouts = { connectMs: 15_000, idleMs: 60_000, maxMs: 3_600_000 };

/**
 * A `git` that talks to the remote, stopped when the remote says nothing within `connectMs` (a
 * silent or non-Git server), when it goes `idleMs` without output, or after `maxMs` in all — so a
 * large fetch that keeps making progress runs on, and a dead one frees its worker quickly.
 */
export function remoteGit(
  dir: string,
  args: string[],
  timeouts: FetchTimeouts,
  authEnv?: Record<string, string>,
): Promise<string> {
  const { connectMs, idleMs, maxMs } = timeouts;
  const env = authEnv
    ? { ...inheritedEnv(), ...authEnv, GIT_TERMINAL_PROMPT: '0' }
    : { ...process.env, ...GIT_ENV };
  // No credential helper for an authenticated fetch: a host-wide `credential.helper=store` would
  // write the token to disk.
  const config = authEnv ? ['-c', 'credential.helper='] : [];
  return new Promise((done, fail) => {
    const child = spawn('git', ['-C', dir, ...config, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let stopped: string | undefined;
    const stop = (why: string) => {
      stopped ??= why;
      child.kill('SIGKILL');
    };
    const seconds = (ms: number) => `${Math.round(ms / 100) / 10} s`;
    let idle = setTimeout(
      () =>
        stop(
          `the remote sent nothing within ${seconds(connectMs)} (GIT_CONNECT_TIMEOUT_SECONDS); is it a Git server?`,
        ),
      connectMs,
    );
    const overall = setTimeout(
      () => stop(`still running after ${seconds(maxMs)} (GIT_FETCH_MAX_SECONDS)`),
      maxMs,
    );
    const moved = () => {
      clearTimeout(idle);
      idle = setTimeout(() => stop(`no progress for ${seconds(idleMs)} (GIT_IDLE_TIMEOUT_SECONDS)`), idleMs);
    };
    child.stdout?.on('data', (d: Buffer) => {
      moved();
      stdout += d.toString();
    });
    child.stderr?.on('data', (d: Buffer) => {
      moved();
      // Progress lines repeat with \r; keep the tail, which holds the error when there is one.
      stderr = (stderr + d.toString()).slice(-4096);
    });
    child.on('error', (e) => {
      clearTimeout(idle);
      clearTimeout(overall);
      fail(new Error(`git ${args[0]}: ${e.message}`));
    });
    child.on('close', (code) => {
      clearTimeout(idle);
      clearTimeout(overall);
      if (stopped) fail(new Error(`git ${args[0]} stopped: ${stopped}`));
      else if (code !== 0) {
        const lines = stderr
          .split(/[\r\n]+/)
          .filter(
            (l) =>
              l.trim() !== '' &&
              !/^remote: *(Enumerating|Counting|Compressing|Total)|^(Receiving|Resolving) /.test(l),
          );
        fail(new Error(lines.join('\n') || `git ${args[0]} exit ${code}`));
      } else done(stdout);
    });
  });
}
