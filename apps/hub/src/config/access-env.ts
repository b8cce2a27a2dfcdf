// Who may call the hub and how much: the admin token, OIDC, agent credentials, the webhook secret, rate and body limits.
import { z } from 'zod';
import { HubConfigError } from './config-error.js';

/** What a person may do, each including the one before: read, act on syncs, administer. */
export const PEOPLE_ROLES = ['viewer', 'operator', 'admin'] as const;
export type PeopleRole = (typeof PEOPLE_ROLES)[number];

export const accessEnv = z.object({
  FLOTILLA_ADMIN_TOKEN: z
    .string()
    .min(16, 'must be at least 16 characters')
    .optional()
    .describe(
      'Break-the-ice admin credential. With it (or OIDC) set, every /api/v1 endpoint requires a bearer token: this one, an API token or an OIDC token.',
    ),
  FLOTILLA_OIDC_ISSUER: z
    .url()
    .optional()
    .describe('OIDC issuer whose bearer JWTs the people API accepts (its "iss"); unset = no OIDC.'),
  FLOTILLA_OIDC_AUDIENCE: z
    .string()
    .min(1)
    .optional()
    .describe('The "aud" an OIDC token must carry; required with FLOTILLA_OIDC_ISSUER.'),
  FLOTILLA_OIDC_JWKS_URL: z
    .url()
    .optional()
    .describe("The issuer's JWKS URL; unset = jwks_uri from <issuer>/.well-known/openid-configuration."),
  FLOTILLA_OIDC_CLIENT_ID: z
    .string()
    .min(1)
    .optional()
    .describe(
      "The web console's OIDC client (public: authorization code with PKCE, redirect URI <hub>/oidc/callback); unset = the console offers token sign-in only.",
    ),
  FLOTILLA_OIDC_SCOPES: z
    .string()
    .min(1)
    .default('openid profile email')
    .describe(
      'Scopes the console asks the issuer for at sign-in, space-separated (add the one that carries FLOTILLA_OIDC_ROLE_CLAIM if the issuer needs it).',
    ),
  FLOTILLA_OIDC_ROLE_CLAIM: z
    .string()
    .min(1)
    .default('groups')
    .describe('Claim holding the groups (or a single role string) that FLOTILLA_OIDC_ROLE_MAP maps.'),
  FLOTILLA_OIDC_ROLE_MAP: z
    .string()
    .default('')
    .superRefine((v, ctx) => {
      const bad = parseRoleMap(v).bad;
      if (bad !== null) {
        ctx.addIssue({ code: 'custom', message: `expected group=viewer|operator|admin pairs; got "${bad}"` });
      }
    })
    .describe(
      'group=role pairs, comma-separated (e.g. "sre=operator,platform=admin"); the highest role wins.',
    ),
  RATE_LIMIT_PEOPLE_PER_MINUTE: z.coerce
    .number()
    .int()
    .min(0)
    .default(600)
    .describe('Requests per minute one people credential may make before 429; 0 = no limit.'),
  RATE_LIMIT_AGENT_PER_MINUTE: z.coerce
    .number()
    .int()
    .min(0)
    .default(600)
    .describe('Requests per minute one agent may make before 429; 0 = no limit.'),
  API_BODY_LIMIT_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(1024 * 1024)
    .describe('Largest JSON body of a people-API request (appsets, clusters, tokens); larger = 413.'),
  AGENT_REPORT_BODY_LIMIT_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(10 * 1024 * 1024)
    .describe('Largest agent report batch (up to 1000 reports); larger = 413.'),
  BOOTSTRAP_TOKEN_TTL_SECONDS: z.coerce
    .number()
    .int()
    .positive()
    .default(3600)
    .describe('How long a cluster bootstrap token stays usable.'),
  AGENT_CREDENTIAL_TTL_SECONDS: z.coerce
    .number()
    .int()
    .min(0)
    .default(0)
    .describe(
      'Lifetime of an agent credential; the agent rotates it when a third of it is left. 0 = until revoked or the agent registers again.',
    ),
  AGENT_CREDENTIAL_ROTATION_GRACE_SECONDS: z.coerce
    .number()
    .int()
    .min(0)
    .max(3600)
    .default(300)
    .describe('How long the replaced credential still works after an agent rotates (requests in flight).'),
  FLOTILLA_WEBHOOK_SECRET: z
    .string()
    .min(16, 'must be at least 16 characters')
    .optional()
    .describe(
      'Shared secret of Git push webhooks (GitHub/Gitea HMAC, GitLab token); unset = POST /api/v1/webhooks/git answers 503.',
    ),
});
export type AccessEnv = z.output<typeof accessEnv>;

export interface OidcConfig {
  issuer: string;
  audience: string;
  jwksUrl: string | null;
  /** The console's public client (authorization code with PKCE); null: no OIDC sign-in in the console. */
  clientId: string | null;
  scopes: string;
  roleClaim: string;
  roleMap: Record<string, PeopleRole>;
}

export interface AccessConfig {
  auth: {
    adminToken: string | null;
    bootstrapTokenTtlSeconds: number;
    credentialTtlSeconds: number;
    credentialRotationGraceSeconds: number;
    oidc: OidcConfig | null;
    rateLimitPerMinute: { people: number; agent: number };
  };
  limits: { apiBodyBytes: number; agentReportBodyBytes: number };
  webhooks: { secret: string | null };
}

/** OIDC needs both ends: whose tokens (the issuer) and for whom (the audience). */
export function checkOidcComplete(e: AccessEnv): void {
  if (e.FLOTILLA_OIDC_ISSUER && !e.FLOTILLA_OIDC_AUDIENCE) {
    throw new HubConfigError([
      { variable: 'FLOTILLA_OIDC_AUDIENCE', message: 'required when FLOTILLA_OIDC_ISSUER is set' },
    ]);
  }
}

export function accessConfig(e: AccessEnv): AccessConfig {
  return {
    auth: {
      adminToken: e.FLOTILLA_ADMIN_TOKEN ?? null,
      bootstrapTokenTtlSeconds: e.BOOTSTRAP_TOKEN_TTL_SECONDS,
      credentialTtlSeconds: e.AGENT_CREDENTIAL_TTL_SECONDS,
      credentialRotationGraceSeconds: e.AGENT_CREDENTIAL_ROTATION_GRACE_SECONDS,
      oidc:
        e.FLOTILLA_OIDC_ISSUER && e.FLOTILLA_OIDC_AUDIENCE
          ? {
              issuer: e.FLOTILLA_OIDC_ISSUER,
              audience: e.FLOTILLA_OIDC_AUDIENCE,
              jwksUrl: e.FLOTILLA_OIDC_JWKS_URL ?? null,
              clientId: e.FLOTILLA_OIDC_CLIENT_ID ?? null,
              scopes: e.FLOTILLA_OIDC_SCOPES,
              roleClaim: e.FLOTILLA_OIDC_ROLE_CLAIM,
              roleMap: parseRoleMap(e.FLOTILLA_OIDC_ROLE_MAP).map,
            }
          : null,
      rateLimitPerMinute: { people: e.RATE_LIMIT_PEOPLE_PER_MINUTE, agent: e.RATE_LIMIT_AGENT_PER_MINUTE },
    },
    limits: { apiBodyBytes: e.API_BODY_LIMIT_BYTES, agentReportBodyBytes: e.AGENT_REPORT_BODY_LIMIT_BYTES },
    webhooks: { secret: e.FLOTILLA_WEBHOOK_SECRET ?? null },
  };
}

/** `group=role,…` → a map; `bad` is the first pair that is not one (kept a string, so `.env.example` shows it). */
function parseRoleMap(text: string): { map: Record<string, PeopleRole>; bad: string | null } {
  const map: Record<string, PeopleRole> = {};
  for (const pair of text
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean)) {
    const eq = pair.lastIndexOf('=');
    const role = pair.slice(eq + 1).trim();
    if (eq <= 0 || !(PEOPLE_ROLES as readonly string[]).includes(role)) return { map, bad: pair };
    map[pair.slice(0, eq).trim()] = role as PeopleRole;
  }
  return { map, bad: null };
}
