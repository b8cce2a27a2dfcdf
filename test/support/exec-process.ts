import { spawn } from 'node:child_process';

/** How a finished child process ended, with everything it printed. */
export interface ProcessOutcome {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs a command to completion, asynchronously: end-to-end specs run kubectl and the built CLI
 * against simulators and hubs that answer from this same process, so nothing may block the loop.
 * A non-zero exit is an outcome to assert on, not an error.
 */
export function execProcess(
  command: string,
  args: string[],
  env: Record<string, string>,
): Promise<ProcessOutcome> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
}
