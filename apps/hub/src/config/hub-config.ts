// The hub's configuration: the environment validated once into one nested object, from each concern's schema and mapping.
import { accessConfig, checkOidcComplete, type AccessConfig } from './access-env.js';
import { auditConfig, type AuditConfig } from './audit-env.js';
import { HubConfigError } from './config-error.js';
import { consoleConfig, type ConsoleConfig } from './console-env.js';
import { refuseUnsafeProduction } from './dev-mode.js';
import { fleetConfig, type FleetConfig } from './fleet-env.js';
import { gitConfig, type GitConfig } from './git-env.js';
import { hubEnvSchema } from './hub-env-schema.js';
import { renderConfig, type RenderConfig } from './render-env.js';
import { reportingConfig, type ReportingConfig } from './reporting-env.js';
import { checkPayloadsKeptNoLongerThanIds, retentionConfig, type RetentionConfig } from './retention-env.js';
import { secretsConfig, type SecretsConfig } from './secrets-env.js';
import { serverConfig, type ServerConfig } from './server-env.js';

// The names the rest of the hub imports from here, wherever in config/ they are defined.
export { PEOPLE_ROLES, type OidcConfig, type PeopleRole } from './access-env.js';
export { HubConfigError } from './config-error.js';
export { devModeWarnings } from './dev-mode.js';
export { renderEnvExample } from './env-example.js';
export { hubEnvSchema, type HubEnv } from './hub-env-schema.js';
export type { RetentionConfig } from './retention-env.js';
export type { DatabaseConfig, HubRole } from './server-env.js';

/** The hub's configuration, validated once at start; nothing else reads process.env. */
export interface HubConfig
  extends
    ServerConfig,
    AccessConfig,
    ConsoleConfig,
    FleetConfig,
    SecretsConfig,
    GitConfig,
    ReportingConfig,
    AuditConfig {
  render: RenderConfig;
  /** FLOTILLA_DEV_MODE=1: the hub may run open and without a secrets key (see devModeWarnings). */
  devMode: boolean;
  retention: RetentionConfig;
}

export const HUB_CONFIG = Symbol('HUB_CONFIG');

/** Validates the environment into a HubConfig; throws HubConfigError naming each bad variable and why. */
export function loadHubConfig(env: Record<string, string | undefined>): HubConfig {
  // An empty variable means "not set", as in most shells' `VAR= cmd`.
  const cleaned = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const parsed = hubEnvSchema.safeParse(cleaned);
  if (!parsed.success) {
    throw new HubConfigError(
      parsed.error.issues.map((i) => ({ variable: String(i.path[0] ?? '(env)'), message: i.message })),
    );
  }
  const e = parsed.data;
  refuseUnsafeProduction(e);
  checkPayloadsKeptNoLongerThanIds(e);
  checkOidcComplete(e);
  return {
    ...serverConfig(e),
    ...accessConfig(e),
    ...consoleConfig(e),
    ...fleetConfig(e),
    render: renderConfig(e),
    ...secretsConfig(e),
    devMode: e.FLOTILLA_DEV_MODE,
    ...gitConfig(e),
    ...reportingConfig(e),
    ...retentionConfig(e),
    ...auditConfig(e),
  };
}
