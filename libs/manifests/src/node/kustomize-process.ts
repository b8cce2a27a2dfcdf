import type { KustomizeRunner } from '../kustomize/kustomize-runner.js';
import { runTool, ToolError } from './tool-process.js';

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

/**
 * Runs `kubectl kustomize <dir>` (or `kustomize build <dir>`) as a child process (runTool: timeout,
 * output cap). Its environment holds only PATH and a throwaway HOME, so no hub secret or kubeconfig
 * can reach a kustomization's plugins or generators.
 */
export class KustomizeProcess implements KustomizeRunner {
  constructor(private readonly options: KustomizeProcessOptions) {}

  async build(dir: string): Promise<string> {
    const { binary, timeoutMs, maxOutputBytes } = this.options;
    const [command, args] = binary ? [binary, ['build', dir]] : ['kubectl', ['kustomize', dir]];
    try {
      return await runTool({
        tool: 'kustomize',
        command,
        args,
        cwd: dir,
        env: {
          PATH: process.env['PATH'] ?? '/usr/bin:/bin',
          HOME: dir,
          LC_ALL: 'C',
          GIT_TERMINAL_PROMPT: '0',
        },
        timeoutMs,
        maxOutputBytes,
      });
    } catch (e) {
      if (e instanceof ToolError) throw new KustomizeError(`kustomize-${e.code}`, e.message, e.stderr);
      throw e;
    }
  }
}
