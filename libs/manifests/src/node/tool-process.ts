import { spawn } from 'node:child_process';

export type ToolErrorCode = 'failed' | 'timeout' | 'output-too-large';

/** A render tool (helm, kustomize) that failed, with what it wrote to stderr (capped). */
export class ToolError extends Error {
  override readonly name = 'ToolError';
  constructor(
    readonly code: ToolErrorCode,
    message: string,
    /** What the tool wrote to stderr, shown to the person who must fix the input. */
    readonly stderr: string,
  ) {
    super(message);
  }
}

export interface ToolRun {
  /** Name used in messages (`helm`, `kustomize`). */
  tool: string;
  command: string;
  args: string[];
  cwd: string;
  /** The whole environment of the child: nothing of the caller's is inherited. */
  env: Record<string, string>;
  timeoutMs: number;
  maxOutputBytes: number;
}

const MAX_STDERR_BYTES = 16 * 1024;

/**
 * Runs a render tool as a child process and returns its stdout. It is killed after the timeout or as
 * soon as its output passes the cap; its environment is only what the caller gives, so no hub secret
 * or kubeconfig reaches a chart's or a kustomization's plugins.
 */
export function runTool(run: ToolRun): Promise<string> {
  const { tool, command, args, timeoutMs, maxOutputBytes } = run;
  return new Promise((resolve, reject) => {
    // Its own process group, so that stopping it also stops what it started (a shell's children, a
    // git that kustomize runs): they would otherwise hold the output pipes open after it is killed.
    const child = spawn(command, args, {
      cwd: run.cwd,
      env: run.env,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    const chunks: Buffer[] = [];
    let size = 0;
    let stderr = '';
    let failure: ToolError | null = null;
    const stop = (e: ToolError) => {
      failure ??= e;
      try {
        if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
      } catch {
        child.kill('SIGKILL'); // the group is gone already; the tool itself may not be
      }
    };
    const timer = setTimeout(
      () => stop(new ToolError('timeout', `${tool} did not finish within ${timeoutMs} ms`, stderr)),
      timeoutMs,
    );
    child.stdout.on('data', (d: Buffer) => {
      size += d.length;
      if (size > maxOutputBytes) {
        stop(new ToolError('output-too-large', `${tool} wrote more than ${maxOutputBytes} bytes`, stderr));
        return;
      }
      chunks.push(d);
    });
    child.stderr.on('data', (d: Buffer) => {
      if (stderr.length < MAX_STDERR_BYTES) stderr += d.toString().slice(0, MAX_STDERR_BYTES - stderr.length);
    });
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(new ToolError('failed', `cannot run ${command}: ${e.message}`, ''));
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      // Nothing the tool started outlives it.
      try {
        if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
      } catch {
        // the group is empty: the usual case
      }
      if (failure) return reject(failure);
      if (code !== 0) {
        return reject(
          new ToolError('failed', `${tool} failed (exit ${code}): ${stderr.trim()}`, stderr.trim()),
        );
      }
      resolve(Buffer.concat(chunks).toString('utf8'));
    });
  });
}
