import { spawn } from 'node:child_process';
import type { KustomizeRunner } from '@flotilla/manifests';

export class KustomizeError extends Error {
  override readonly name = 'KustomizeError';
  constructor(
    readonly code: 'kustomize-failed' | 'kustomize-timeout' | 'kustomize-output-too-large',
    message: string,
    /** What kustomize wrote to stderr (capped), shown to the person who must fix the kustomization. */
    readonly stderr: string,
  ) {
    super(message);
  }
}

export interface KustomizeProcessOptions {
  /** A `kustomize` binary; null = `kubectl kustomize`. */
  binary: string | null;
  timeoutMs: number;
  maxOutputBytes: number;
  /** Let kustomize fetch remote bases (it needs the network and git then). */
  allowRemoteBases: boolean;
}

const MAX_STDERR_BYTES = 16 * 1024;

/**
 * Runs `kubectl kustomize <dir>` (or `kustomize build <dir>`) as a child process: killed after the
 * timeout or as soon as its output passes the cap. Its environment holds only PATH and a throwaway
 * HOME, so no hub secret or kubeconfig can reach a kustomization's plugins or generators.
 */
export class KustomizeProcess implements KustomizeRunner {
  constructor(private readonly options: KustomizeProcessOptions) {}

  build(dir: string): Promise<string> {
    const { binary, timeoutMs, maxOutputBytes } = this.options;
    const [command, args] = binary ? [binary, ['build', dir]] : ['kubectl', ['kustomize', dir]];
    return new Promise((resolve, reject) => {
      const child = spawn(command, args, {
        cwd: dir,
        env: {
          PATH: process.env['PATH'] ?? '/usr/bin:/bin',
          HOME: dir,
          LC_ALL: 'C',
          GIT_TERMINAL_PROMPT: '0',
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      const chunks: Buffer[] = [];
      let size = 0;
      let stderr = '';
      let failure: KustomizeError | null = null;
      const stop = (e: KustomizeError) => {
        failure ??= e;
        child.kill('SIGKILL');
      };
      const timer = setTimeout(
        () =>
          stop(
            new KustomizeError(
              'kustomize-timeout',
              `kustomize did not finish within ${timeoutMs} ms`,
              stderr,
            ),
          ),
        timeoutMs,
      );
      child.stdout.on('data', (d: Buffer) => {
        size += d.length;
        if (size > maxOutputBytes) {
          stop(
            new KustomizeError(
              'kustomize-output-too-large',
              `kustomize wrote more than ${maxOutputBytes} bytes`,
              stderr,
            ),
          );
          return;
        }
        chunks.push(d);
      });
      child.stderr.on('data', (d: Buffer) => {
        if (stderr.length < MAX_STDERR_BYTES)
          stderr += d.toString().slice(0, MAX_STDERR_BYTES - stderr.length);
      });
      child.on('error', (e) => {
        clearTimeout(timer);
        reject(new KustomizeError('kustomize-failed', `cannot run ${command}: ${e.message}`, ''));
      });
      child.on('close', (code) => {
        clearTimeout(timer);
        if (failure) return reject(failure);
        if (code !== 0) {
          return reject(
            new KustomizeError(
              'kustomize-failed',
              `kustomize failed (exit ${code}): ${stderr.trim()}`,
              stderr.trim(),
            ),
          );
        }
        resolve(Buffer.concat(chunks).toString('utf8'));
      });
    });
  }
}
