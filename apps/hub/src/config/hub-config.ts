import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { DEFAULT_DELETION_GUARD_PERCENT } from '@flotilla/plan';
import { z } from 'zod';
import { DEFAULT_KUBE_VERSION } from '@flotilla/manifests';

const HUB_ROLE_NAMES = ['api', 'worker'] as const;

/** What a person may do, each including the one before: read, act on syncs, administer. */
export const PEOPLE_ROLES = ['viewer', 'operator', 'admin'] as const;
export type PeopleRole = (typeof PEOPLE_ROLES)[number];
export type HubRole = (typeof HUB_ROLE_NAMES)[number];

/**
 * Every environment variable the hub reads, with its default and a line of documentation.
 * `.env.example` is generated from this (npm run env:example -w @flotilla/hub).
 */
export const hubEnvSchema = z.object({
  HOST: z.string().min(1).default('127.0.0.1').describe('Address the HTTP server binds.'),
  PORT: z.coerce.number().int().min(0).max(65535).default(8080).describe('HTTP port (0 = any free port).'),
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// or postgresql:// URL')
    .optional()
    .describe('PostgreSQL URL. Unset: an embedded PGlite database under FLOTILLA_DATA_DIR/db.'),
  FLOTILLA_DATA_DIR: z
    .string()
    .min(1)
    .default('.flotilla')
    .describe('Where the hub keeps Git mirrors and the embedded database.'),
  REDIS_URL: z
    .string()
    .regex(/^rediss?:\/\//, 'must be a redis:// or rediss:// URL')
    .default('redis://127.0.0.1:6379')
    .describe('Redis for BullMQ queues and agent wake-ups.'),
  REDIS_PREFIX: z
    .string()
    .regex(/^[A-Za-z0-9_.-]+$/, 'letters, digits, "_", "." and "-" only')
    .default('flotilla')
    .describe('Key prefix, so several hubs or test runs can share one Redis.'),
  HUB_ROLES: z
    .string()
    .default('api,worker')
    .transform((v, ctx) => {
      const roles = v
        .split(',')
        .map((r) => r.trim())
        .filter(Boolean);
      const bad = roles.filter((r) => !(HUB_ROLE_NAMES as readonly string[]).includes(r));
      if (bad.length > 0 || roles.length === 0) {
        ctx.addIssue({
          code: 'custom',
          message: `expected a comma-separated list of api, worker; got "${v}"`,
        });
        return z.NEVER;
      }
      return roles as HubRole[];
    })
    .describe('What this process runs: api (HTTP), worker (BullMQ pipeline) or both.'),
  SOURCE_POLL_INTERVAL_SECONDS: z.coerce
    .number()
    .positive()
    .default(30)
    .describe('How often every repository is fetched.'),
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
  ROLLOUT_TICK_SECONDS: z.coerce
    .number()
    .positive()
    .default(5)
    .describe('How often a running rollout looks at its step again (release, bake, advance).'),
  CLUSTER_OFFLINE_SECONDS: z.coerce
    .number()
    .int()
    .positive()
    .default(120)
    .describe(
      'A cluster whose agent has not called for this long is offline: rollouts skip it within their failure budget.',
    ),
  DELETION_GUARD_PERCENT: z.coerce
    .number()
    .min(0)
    .max(100)
    .default(DEFAULT_DELETION_GUARD_PERCENT)
    .describe(
      'An appset expansion that would delete more than this share of its targets (or all of them) waits for confirmation.',
    ),
  FLOTILLA_HEALTH_LUA_DIR: z
    .string()
    .optional()
    .describe(
      "Custom health checks for every cluster, in Argo CD's resource_customizations layout (<group>/<kind>/health.lua); a fleet repository's rule of the same key wins. Checked at start: a script that does not compile stops the hub, naming its file.",
    ),
  FLEET_REPOSITORIES: z
    .string()
    .default('')
    .describe(
      'Fleet repositories the hub reconciles its own objects from, comma-separated: <url>[#<revision>[:<path>]] (revision HEAD, path the root by default).',
    ),
  BREAK_GLASS_MAX_MINUTES: z.coerce
    .number()
    .int()
    .positive()
    .default(1440)
    .describe('The longest a break-glass override may stay open, in minutes (default 24 h).'),
  KUSTOMIZE_BINARY: z
    .string()
    .min(1)
    .optional()
    .describe(
      'A `kustomize` binary to render kustomizations with; unset = `kubectl kustomize` (kubectl on PATH).',
    ),
  KUSTOMIZE_ALLOW_REMOTE_BASES: z
    .enum(['true', 'false'])
    .default('false')
    .transform((v) => v === 'true')
    .describe('Let kustomizations load remote bases (URLs, github.com/...); off, such a render is refused.'),
  HELM_BINARY: z
    .string()
    .min(1)
    .optional()
    .describe(
      'The `helm` binary that renders charts; unset = the first `helm` on PATH, else the Helm `npm ci` unpacked.',
    ),
  HELM_KUBE_VERSION: z
    .string()
    .regex(/^v?\d+\.\d+(\.\d+)?([-+][0-9A-Za-z.+-]*)?$/, 'must be a Kubernetes version such as 1.32.0')
    .default(DEFAULT_KUBE_VERSION)
    .describe(
      "The Kubernetes version charts see as .Capabilities.KubeVersion until their cluster's agent reports its own (unless source.helm.kubeVersion).",
    ),
  HELM_REPOSITORY_CACHE_SECONDS: z.coerce
    .number()
    .min(0)
    .default(60)
    .describe("How long a Helm repository's index.yaml is reused before the hub fetches it again."),
  HELM_REPOSITORY_POLL_SECONDS: z.coerce
    .number()
    .min(0)
    .default(180)
    .describe(
      'How often every chart version range is resolved again, so a chart published within a range reaches the fleet without a Git change (one check fleet-wide); 0 = only when an appset is expanded.',
    ),
  RENDER_TIMEOUT_SECONDS: z.coerce
    .number()
    .positive()
    .default(60)
    .describe(
      'Longest one kustomize build or helm template may run before it is killed and the render fails.',
    ),
  RENDER_MAX_OUTPUT_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(32 * 1024 * 1024)
    .describe('Largest output one kustomize build or helm template may write; more fails the render.'),
  RENDER_CONCURRENCY: z.coerce
    .number()
    .int()
    .min(0)
    .default(0)
    .describe(
      'Most renders (helm template, kustomize build, plain reads) one hub process runs at once; 0 = one per CPU. An expansion with 1,000 distinct charts queues them instead of starting 1,000 processes.',
    ),
  FLOTILLA_SECRETS_KEY: z
    .string()
    .regex(/^[0-9a-fA-F]{64}$/, 'must be 32 bytes as 64 hex digits (openssl rand -hex 32)')
    .optional()
    .describe('AES-256-GCM key for repository credentials at rest; unset = credentials cannot be stored.'),
  FLOTILLA_SECRETS_KEY_PREVIOUS: z
    .string()
    .regex(/^([0-9a-fA-F]{64})(,[0-9a-fA-F]{64})*$/, 'comma-separated 64-hex-digit keys')
    .optional()
    .describe(
      'Retired secrets keys (comma-separated) still read during a rotation; the hub re-encrypts with the current one at start.',
    ),
  FLOTILLA_DEV_MODE: z
    .enum(['0', '1', 'false', 'true'], 'expected 1 or true (development hub), 0 or false')
    .default('0')
    .transform((v) => v === '1' || v === 'true')
    .describe(
      '1 = a development hub: starts without FLOTILLA_ADMIN_TOKEN/OIDC (anyone is admin) and without FLOTILLA_SECRETS_KEY, and says so at start and on /readyz. Never in production.',
    ),
  NOTIFY_TIMEOUT_SECONDS: z.coerce
    .number()
    .positive()
    .max(300)
    .default(10)
    .describe(
      'How long one notification request (webhook, Slack, SMTP, commit status) may take before it counts as failed.',
    ),
  METRICS_REASONS_MAX_AGE_SECONDS: z.coerce
    .number()
    .int()
    .min(0)
    .max(3600)
    .default(30)
    .describe(
      'flotilla_targets_by_reason is computed over every target at most this often per replica; scrapes in between get the last counts (0 = at every scrape).',
    ),
  FLOTILLA_LOCAL_REPOSITORIES: z
    .string()
    .optional()
    .superRefine((v, ctx) => {
      const bad = (v ?? '').split(',').find((d) => d.trim() !== '' && !d.trim().startsWith('/'));
      if (bad !== undefined)
        ctx.addIssue({ code: 'custom', message: `expected absolute directories; got "${bad}"` });
    })
    .describe(
      'Directories (comma-separated, absolute) under which file:// repositories may live. Unset: none, or any directory in development mode. Never the hub data dir (its mirrors).',
    ),
  GIT_CONNECT_TIMEOUT_SECONDS: z.coerce
    .number()
    .positive()
    .default(15)
    .describe(
      'Longest a Git fetch may wait for its first byte from the remote (an unresponsive or non-Git server).',
    ),
  GIT_IDLE_TIMEOUT_SECONDS: z.coerce
    .number()
    .positive()
    .default(60)
    .describe(
      'Longest a Git fetch may go without progress (no output) before it is stopped; a fetch making progress runs on.',
    ),
  GIT_FETCH_MAX_SECONDS: z.coerce
    .number()
    .positive()
    .default(3600)
    .describe('Longest one Git fetch may run in all, progress or not.'),
  OPENAPI: z
    .enum(['authenticated', 'public', 'off'])
    .optional()
    .describe(
      'Who may read the OpenAPI document (/api/docs-json): authenticated = any people credential (viewer), public = anyone, also the /api/docs UI; off = not served. Unset: authenticated, or public on an open hub (no admin token, no OIDC).',
    ),
  FLOTILLA_CONSOLE_DIR: z
    .string()
    .optional()
    .describe(
      'The built web console (index.html and assets/) the hub serves at /; off = no console. Unset: apps/console/dist beside the hub.',
    ),
  RETENTION_REPORT_PAYLOAD_DAYS: z.coerce
    .number()
    .int()
    .min(0)
    .default(7)
    .describe(
      "Days an agent report's payload is kept after it arrived; then only its id stays (for replays). 0 = keep payloads forever.",
    ),
  RETENTION_REPORT_ID_DAYS: z.coerce
    .number()
    .int()
    .min(0)
    .default(90)
    .describe(
      'Days an agent report id is kept to recognise replays. Once ids were deleted, a report observed before them is too old to tell from a replay and is dropped at ingest. 0 = keep ids forever.',
    ),
  RETENTION_SYNC_RUN_DAYS: z.coerce
    .number()
    .int()
    .min(0)
    .default(365)
    .describe('Days sync history is kept (by when the run started). 0 = keep it forever.'),
  RETENTION_BUNDLE_DAYS: z.coerce
    .number()
    .int()
    .min(0)
    .default(30)
    .describe(
      'Days a rendered bundle no target needs is kept (desired, released, last synced, pinned and the last good one for rollback are always kept). 0 = keep every bundle.',
    ),
  RETENTION_INTERVAL_MINUTES: z.coerce
    .number()
    .int()
    .positive()
    .default(60)
    .describe('How often the retention job runs (once per interval across all hub replicas).'),
  RETENTION_BATCH_SIZE: z.coerce
    .number()
    .int()
    .min(1)
    .max(100_000)
    .default(1000)
    .describe('Rows one retention statement deletes or trims at most, so no statement holds locks for long.'),
  LOG_LEVEL: z
    .enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
    .default('info')
    .describe('pino log level.'),
});
export type HubEnv = z.output<typeof hubEnvSchema>;

export type DatabaseConfig = { kind: 'postgres'; url: string } | { kind: 'pglite'; dir: string | null };

/** The hub's configuration, validated once at start; nothing else reads process.env. */
export interface HubConfig {
  http: { host: string; port: number };
  database: DatabaseConfig;
  redis: { url: string; prefix: string };
  roles: { api: boolean; worker: boolean };
  dataDir: string;
  sources: { pollIntervalSeconds: number };
  auth: {
    adminToken: string | null;
    bootstrapTokenTtlSeconds: number;
    credentialTtlSeconds: number;
    credentialRotationGraceSeconds: number;
    oidc: OidcConfig | null;
    rateLimitPerMinute: { people: number; agent: number };
  };
  limits: { apiBodyBytes: number; agentReportBodyBytes: number };
  log: { level: HubEnv['LOG_LEVEL'] };
  /** Who may read the OpenAPI document (see OPENAPI). */
  openApi: 'authenticated' | 'public' | 'off';
  /** The web console's built files (null: not served). */
  console: { dir: string | null };
  appsets: { deletionGuardPercent: number };
  fleet: { repositories: string };
  /** FLOTILLA_HEALTH_LUA_DIR (null: no hub-wide health rules). */
  healthRules: { luaDir: string | null };
  rollouts: { tickSeconds: number; offlineAfterSeconds: number };
  webhooks: { secret: string | null };
  breakGlass: { maxMinutes: number };
  render: {
    kustomizeBinary: string | null;
    allowRemoteBases: boolean;
    /** HELM_BINARY; null = PATH, then the bundled Helm (resolveHelmBinary). */
    helmBinary: string | null;
    /** What charts see as .Capabilities.KubeVersion. */
    helmKubeVersion: string;
    /** How long a fetched Helm repository index is reused. */
    helmRepositoryCacheSeconds: number;
    /** How often chart version ranges are resolved again (0 = never on its own). */
    helmRepositoryPollSeconds: number;
    timeoutSeconds: number;
    maxOutputBytes: number;
    /** Renders run at once by one hub process (RENDER_CONCURRENCY; 0 was read as one per CPU). */
    concurrency: number;
  };
  /** AES-256-GCM keys (hex): the current one encrypts, every one decrypts. */
  secrets: { key: string | null; previousKeys: string[] };
  /** FLOTILLA_DEV_MODE=1: the hub may run open and without a secrets key (see devModeWarnings). */
  devMode: boolean;
  /** Where file:// repositories may live ('any' = development mode without a list), and Git's timeouts. */
  git: {
    localRepositories: string[] | 'any';
    connectTimeoutSeconds: number;
    idleTimeoutSeconds: number;
    fetchMaxSeconds: number;
  };
  notifications: { timeoutSeconds: number };
  metrics: { reasonsMaxAgeSeconds: number };
  retention: RetentionConfig;
}

/** How long each kind of record is kept (days; 0 = forever) and how the retention job runs. */
export interface RetentionConfig {
  reportPayloadDays: number;
  reportIdDays: number;
  syncRunDays: number;
  bundleDays: number;
  intervalMinutes: number;
  batchSize: number;
}

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

export const HUB_CONFIG = Symbol('HUB_CONFIG');

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  constructor(
    readonly issues: { variable: string; message: string }[],
    message = `invalid hub configuration:\n${issues.map((i) => `  ${i.variable}: ${i.message}`).join('\n')}`,
  ) {
    super(message);
  }
}

/** What a hub outside development mode must have, each with what goes wrong without it. */
const PRODUCTION_REQUIREMENTS = [
  {
    variable: 'FLOTILLA_ADMIN_TOKEN',
    missing: (e: HubEnv) => !e.FLOTILLA_ADMIN_TOKEN && !e.FLOTILLA_OIDC_ISSUER,
    set: 'FLOTILLA_ADMIN_TOKEN or FLOTILLA_OIDC_ISSUER',
    risk: 'anyone who reaches the hub is admin',
  },
  {
    variable: 'FLOTILLA_SECRETS_KEY',
    missing: (e: HubEnv) => !e.FLOTILLA_SECRETS_KEY,
    set: 'FLOTILLA_SECRETS_KEY',
    risk: 'repository credentials cannot be stored',
  },
] as const;

/** Validates the environment into a HubConfig; throws ConfigError naming each bad variable and why. */
export function loadHubConfig(env: Record<string, string | undefined>): HubConfig {
  // An empty variable means "not set", as in most shells' `VAR= cmd`.
  const cleaned = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const parsed = hubEnvSchema.safeParse(cleaned);
  if (!parsed.success) {
    throw new ConfigError(
      parsed.error.issues.map((i) => ({ variable: String(i.path[0] ?? '(env)'), message: i.message })),
    );
  }
  const e = parsed.data;
  // An open hub, or one that cannot keep credentials, is refused outright rather than started with a
  // warning nobody reads: the one line names every variable to set, and the way out for development.
  const missing = PRODUCTION_REQUIREMENTS.filter((r) => r.missing(e));
  if (!e.FLOTILLA_DEV_MODE && missing.length > 0) {
    throw new ConfigError(
      missing.map((r) => ({ variable: r.variable, message: `set ${r.set} (without it ${r.risk})` })),
      `refusing to start: set ${missing.map((r) => `${r.set} (without it ${r.risk})`).join(' and ')}, or FLOTILLA_DEV_MODE=1 for a development hub`,
    );
  }
  // A payload outliving its id would be a report the hub keeps but could no longer recognise.
  if (
    e.RETENTION_REPORT_ID_DAYS > 0 &&
    (e.RETENTION_REPORT_PAYLOAD_DAYS === 0 || e.RETENTION_REPORT_PAYLOAD_DAYS > e.RETENTION_REPORT_ID_DAYS)
  ) {
    throw new ConfigError([
      {
        variable: 'RETENTION_REPORT_PAYLOAD_DAYS',
        message: `must be between 1 and RETENTION_REPORT_ID_DAYS (${e.RETENTION_REPORT_ID_DAYS}): a payload is kept no longer than its id; got ${e.RETENTION_REPORT_PAYLOAD_DAYS}`,
      },
    ]);
  }
  if (e.FLOTILLA_OIDC_ISSUER && !e.FLOTILLA_OIDC_AUDIENCE) {
    throw new ConfigError([
      { variable: 'FLOTILLA_OIDC_AUDIENCE', message: 'required when FLOTILLA_OIDC_ISSUER is set' },
    ]);
  }
  return {
    http: { host: e.HOST, port: e.PORT },
    database: e.DATABASE_URL
      ? { kind: 'postgres', url: e.DATABASE_URL }
      : { kind: 'pglite', dir: `${e.FLOTILLA_DATA_DIR}/db` },
    redis: { url: e.REDIS_URL, prefix: e.REDIS_PREFIX },
    roles: { api: e.HUB_ROLES.includes('api'), worker: e.HUB_ROLES.includes('worker') },
    dataDir: e.FLOTILLA_DATA_DIR,
    sources: { pollIntervalSeconds: e.SOURCE_POLL_INTERVAL_SECONDS },
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
    log: { level: e.LOG_LEVEL },
    // An open hub lets anyone call every route anyway; hiding their description would only hide it.
    openApi: e.OPENAPI ?? (e.FLOTILLA_ADMIN_TOKEN || e.FLOTILLA_OIDC_ISSUER ? 'authenticated' : 'public'),
    console: {
      dir:
        e.FLOTILLA_CONSOLE_DIR === 'off'
          ? null
          : (e.FLOTILLA_CONSOLE_DIR ?? fileURLToPath(new URL('../../../console/dist', import.meta.url))),
    },
    appsets: { deletionGuardPercent: e.DELETION_GUARD_PERCENT },
    fleet: { repositories: e.FLEET_REPOSITORIES },
    healthRules: { luaDir: e.FLOTILLA_HEALTH_LUA_DIR ?? null },
    rollouts: { tickSeconds: e.ROLLOUT_TICK_SECONDS, offlineAfterSeconds: e.CLUSTER_OFFLINE_SECONDS },
    webhooks: { secret: e.FLOTILLA_WEBHOOK_SECRET ?? null },
    breakGlass: { maxMinutes: e.BREAK_GLASS_MAX_MINUTES },
    render: {
      kustomizeBinary: e.KUSTOMIZE_BINARY ?? null,
      allowRemoteBases: e.KUSTOMIZE_ALLOW_REMOTE_BASES,
      helmBinary: e.HELM_BINARY ?? null,
      helmKubeVersion: e.HELM_KUBE_VERSION,
      helmRepositoryCacheSeconds: e.HELM_REPOSITORY_CACHE_SECONDS,
      helmRepositoryPollSeconds: e.HELM_REPOSITORY_POLL_SECONDS,
      timeoutSeconds: e.RENDER_TIMEOUT_SECONDS,
      maxOutputBytes: e.RENDER_MAX_OUTPUT_BYTES,
      concurrency: e.RENDER_CONCURRENCY === 0 ? availableParallelism() : e.RENDER_CONCURRENCY,
    },
    secrets: {
      key: e.FLOTILLA_SECRETS_KEY?.toLowerCase() ?? null,
      previousKeys: e.FLOTILLA_SECRETS_KEY_PREVIOUS?.toLowerCase().split(',') ?? [],
    },
    devMode: e.FLOTILLA_DEV_MODE,
    git: {
      localRepositories:
        e.FLOTILLA_LOCAL_REPOSITORIES !== undefined
          ? e.FLOTILLA_LOCAL_REPOSITORIES.split(',')
              .map((d) => d.trim())
              .filter(Boolean)
          : e.FLOTILLA_DEV_MODE
            ? 'any'
            : [],
      connectTimeoutSeconds: e.GIT_CONNECT_TIMEOUT_SECONDS,
      idleTimeoutSeconds: e.GIT_IDLE_TIMEOUT_SECONDS,
      fetchMaxSeconds: e.GIT_FETCH_MAX_SECONDS,
    },
    notifications: { timeoutSeconds: e.NOTIFY_TIMEOUT_SECONDS },
    metrics: { reasonsMaxAgeSeconds: e.METRICS_REASONS_MAX_AGE_SECONDS },
    retention: {
      reportPayloadDays: e.RETENTION_REPORT_PAYLOAD_DAYS,
      reportIdDays: e.RETENTION_REPORT_ID_DAYS,
      syncRunDays: e.RETENTION_SYNC_RUN_DAYS,
      bundleDays: e.RETENTION_BUNDLE_DAYS,
      intervalMinutes: e.RETENTION_INTERVAL_MINUTES,
      batchSize: e.RETENTION_BATCH_SIZE,
    },
  };
}

/**
 * What a development-mode hub must say at start and on /readyz: that it is one, and each safety it
 * runs without. Empty outside development mode (such a hub has refused to start instead).
 */
export function devModeWarnings(config: HubConfig): string[] {
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

/** `.env.example` text: every variable with its description and default (commented out when optional). */
export function renderEnvExample(): string {
  const lines = ['# Generated from apps/hub/src/config/hub-config.ts — do not edit by hand.', ''];
  for (const [name, schema] of Object.entries(hubEnvSchema.shape)) {
    const dflt = schema.safeParse(undefined);
    const shown = dflt.success && dflt.data !== undefined ? String(dflt.data) : '';
    lines.push(`# ${schema.description ?? ''}`);
    lines.push(dflt.success && dflt.data !== undefined ? `${name}=${shown}` : `# ${name}=`);
    lines.push('');
  }
  return lines.join('\n');
}
