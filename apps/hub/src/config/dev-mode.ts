// Development mode: a hub that may run open and without a secrets key, says so loudly, and outside which such a hub is refused.
import { z } from 'zod';
import type { AccessEnv } from './access-env.js';
import { HubConfigError } from './config-error.js';
import type { SecretsEnv } from './secrets-env.js';

export const devModeEnv = z.object({
  FLOTILLA_DEV_MODE: z
    .enum(['0', '1', 'false', 'true'], 'expected 1 or true (development hub), 0 or false')
    .default('0')
    .transform((v) => v === '1' || v === 'true')
    .describe(
      '1 = a development hub: starts without FLOTILLA_ADMIN_TOKEN/OIDC (anyone is admin) and without FLOTILLA_SECRETS_KEY, and says so at start and on /readyz. Never in production.',
    ),
});
export type DevModeEnv = z.output<typeof devModeEnv>;

/** What a hub outside development mode must have, each with what goes wrong without it. */
const PRODUCTION_REQUIREMENTS = [
  {
    variable: 'FLOTILLA_ADMIN_TOKEN',
    missing: (e: AccessEnv) => !e.FLOTILLA_ADMIN_TOKEN && !e.FLOTILLA_OIDC_ISSUER,
    set: 'FLOTILLA_ADMIN_TOKEN or FLOTILLA_OIDC_ISSUER',
    risk: 'anyone who reaches the hub is admin',
  },
  {
    variable: 'FLOTILLA_SECRETS_KEY',
    missing: (e: SecretsEnv) => !e.FLOTILLA_SECRETS_KEY,
    set: 'FLOTILLA_SECRETS_KEY',
    risk: 'repository credentials cannot be stored',
  },
] as const;

/**
 * An open hub, or one that cannot keep credentials, is refused outright rather than started with a
 * warning nobody reads: the one line names every variable to set, and the way out for development.
 */
export function refuseUnsafeProduction(e: DevModeEnv & AccessEnv & SecretsEnv): void {
  const missing = PRODUCTION_REQUIREMENTS.filter((r) => r.missing(e));
  if (!e.FLOTILLA_DEV_MODE && missing.length > 0) {
    throw new HubConfigError(
      missing.map((r) => ({ variable: r.variable, message: `set ${r.set} (without it ${r.risk})` })),
      `refusing to start: set ${missing.map((r) => `${r.set} (without it ${r.risk})`).join(' and ')}, or FLOTILLA_DEV_MODE=1 for a development hub`,
    );
  }
}

/** The parts of the hub's configuration development mode speaks about. */
interface DevModeSafeties {
  /** FLOTILLA_DEV_MODE=1: the hub may run open and without a secrets key (see devModeWarnings). */
  devMode: boolean;
  auth: { adminToken: string | null; oidc: object | null };
  secrets: { key: string | null };
}

/**
 * What a development-mode hub must say at start and on /readyz: that it is one, and each safety it
 * runs without. Empty outside development mode (such a hub has refused to start instead).
 */
export function devModeWarnings(config: DevModeSafeties): string[] {
  if (!config.devMode) return [];
  const warnings = ['DEVELOPMENT MODE (FLOTILLA_DEV_MODE=1): not for production'];
  if (config.auth.adminToken === null && config.auth.oidc === null) {
    warnings.push('no FLOTILLA_ADMIN_TOKEN or OIDC: the API is open, anyone who reaches the hub is admin');
  }
  if (config.secrets.key === null) {
    warnings.push('no FLOTILLA_SECRETS_KEY: repository credentials cannot be stored');
  }
  return warnings;
}
