import { resolve } from 'node:path';
import { z } from 'zod';

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** An unset variable and an empty one mean the same thing: deployment templates often leave `FOO=` behind. */
const optionalText = z.preprocess((v) => (v === '' ? undefined : v), z.string().min(1).optional());

export const agentEnvSchema = z.object({
  FLOTILLA_HUB_URL: z.url({
    protocol: /^https?$/,
    error: 'must be an http(s) URL such as https://hub.example.com',
  }),
  FLOTILLA_CLUSTER_NAME: z
    .string({ error: 'is required: the cluster name the hub knows this cluster by' })
    .regex(/^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/, {
      error: 'must be a DNS-style name: lower-case letters, digits, "-" and "."',
    }),
  FLOTILLA_BOOTSTRAP_TOKEN: optionalText,
  KUBECONFIG: optionalText,
  FLOTILLA_STATE_DIR: optionalText,
  FLOTILLA_RESYNC_SECONDS: z.preprocess(
    (v) => (v === '' ? undefined : v),
    z.coerce
      .number({ error: 'must be a whole number of seconds' })
      .int({ error: 'must be a whole number of seconds' })
      .min(5, { error: 'must be at least 5 seconds' })
      .max(86_400, { error: 'must be at most 86400 seconds (one day)' })
      .default(180),
  ),
  FLOTILLA_WAVE_TIMEOUT_SECONDS: z.preprocess(
    (v) => (v === '' ? undefined : v),
    z.coerce
      .number({ error: 'must be a whole number of seconds' })
      .int({ error: 'must be a whole number of seconds' })
      .min(1, { error: 'must be at least 1 second' })
      .max(86_400, { error: 'must be at most 86400 seconds (one day)' })
      .default(300),
  ),
  FLOTILLA_STATUS_PORT: z.preprocess(
    (v) => (v === '' ? undefined : v),
    z.coerce
      .number({ error: 'must be a TCP port number' })
      .int({ error: 'must be a TCP port number' })
      .min(0, { error: 'must be a TCP port number (0 to 65535)' })
      .max(65_535, { error: 'must be a TCP port number (0 to 65535)' })
      .optional(),
  ),
  FLOTILLA_STATUS_HOST: z.preprocess((v) => (v === '' ? undefined : v), z.string().min(1).default('0.0.0.0')),
  FLOTILLA_NAMESPACES: z.preprocess(
    (v) => (typeof v === 'string' && v.trim() !== '' ? v.split(',').map((n) => n.trim()) : undefined),
    z
      .array(
        z.string().regex(/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/, {
          error:
            'must be a comma-separated list of namespace names (DNS labels: lower-case letters, digits, "-")',
        }),
      )
      .optional(),
  ),
  FLOTILLA_IMPERSONATE_NAMESPACE: z.preprocess(
    (v) => (v === '' ? undefined : v),
    z
      .string()
      .regex(/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/, {
        error:
          'must be a namespace name (a DNS label): where the flotilla-project-<project> ServiceAccounts live',
      })
      .optional(),
  ),
  SOPS_AGE_KEY_FILE: optionalText,
  SOPS_AGE_KEY: optionalText,
  FLOTILLA_LOG_LEVEL: z.preprocess(
    (v) => (v === '' ? undefined : v),
    z.enum(LOG_LEVELS, { error: `must be one of ${LOG_LEVELS.join(', ')}` }).default('info'),
  ),
});

/** The agent's whole configuration; only `loadAgentConfig` reads the environment to build it. */
export interface AgentConfig {
  hubUrl: string;
  clusterName: string;
  /** Needed only until a credential is stored in the state dir. */
  bootstrapToken?: string;
  /** Path to a kubeconfig; in-cluster service-account config when absent. */
  kubeconfigPath?: string;
  stateDir: string;
  resyncSeconds: number;
  /** How long a sync waits for one wave to turn healthy, or for a hook to finish, before it fails. Default 300. */
  waveTimeoutSeconds?: number;
  logLevel: LogLevel;
  /** An age key file (`AGE-SECRET-KEY-…` lines) for SOPS-encrypted manifests; it never leaves the cluster. */
  ageKeyFile?: string;
  /** The same keys given inline, as `sops` accepts them. */
  ageKey?: string;
  /** Serve /healthz, /readyz and /metrics on this port (0: any free one); absent: no listening socket. */
  statusPort?: number;
  /** The address the status port binds (default 0.0.0.0, so the kubelet reaches it on the pod IP). */
  statusHost?: string;
  /**
   * A namespace-scoped agent: it holds a Role in each of these namespaces and no ClusterRole, so it
   * lists and watches them one by one and refuses cluster-scoped objects and other namespaces.
   * Absent: cluster-wide.
   */
  namespaces?: string[];
  /**
   * Writes each target's objects as its project's ServiceAccount `flotilla-project-<project>` in
   * this namespace (impersonation), so that what a sync can do is what the project may; the agent's
   * own identity only reads, watches and writes Events. Absent: the agent writes as itself.
   */
  impersonateNamespace?: string;
}

export class AgentConfigError extends Error {
  readonly code = 'agent-config-invalid';
  constructor(readonly issues: { variable: string; message: string }[]) {
    super(`invalid agent configuration:\n${issues.map((i) => `  ${i.variable}: ${i.message}`).join('\n')}`);
    this.name = 'AgentConfigError';
  }
}

export function loadAgentConfig(env: Record<string, string | undefined>): AgentConfig {
  const parsed = agentEnvSchema.safeParse(env);
  if (!parsed.success) {
    throw new AgentConfigError(
      parsed.error.issues.map((i) => ({ variable: String(i.path[0] ?? '(env)'), message: i.message })),
    );
  }
  const e = parsed.data;
  const config: AgentConfig = {
    hubUrl: e.FLOTILLA_HUB_URL.replace(/\/+$/, ''),
    clusterName: e.FLOTILLA_CLUSTER_NAME,
    stateDir: resolve(e.FLOTILLA_STATE_DIR ?? `./.flotilla-agent/${e.FLOTILLA_CLUSTER_NAME}`),
    resyncSeconds: e.FLOTILLA_RESYNC_SECONDS,
    waveTimeoutSeconds: e.FLOTILLA_WAVE_TIMEOUT_SECONDS,
    logLevel: e.FLOTILLA_LOG_LEVEL,
  };
  if (e.FLOTILLA_BOOTSTRAP_TOKEN !== undefined) config.bootstrapToken = e.FLOTILLA_BOOTSTRAP_TOKEN;
  if (e.KUBECONFIG !== undefined) config.kubeconfigPath = resolve(e.KUBECONFIG);
  if (e.SOPS_AGE_KEY_FILE !== undefined) config.ageKeyFile = resolve(e.SOPS_AGE_KEY_FILE);
  if (e.SOPS_AGE_KEY !== undefined) config.ageKey = e.SOPS_AGE_KEY;
  if (e.FLOTILLA_IMPERSONATE_NAMESPACE !== undefined)
    config.impersonateNamespace = e.FLOTILLA_IMPERSONATE_NAMESPACE;
  if (e.FLOTILLA_NAMESPACES !== undefined) config.namespaces = [...new Set(e.FLOTILLA_NAMESPACES)];
  if (e.FLOTILLA_STATUS_PORT !== undefined) {
    config.statusPort = e.FLOTILLA_STATUS_PORT;
    config.statusHost = e.FLOTILLA_STATUS_HOST;
  }
  return config;
}

/** The user a target of `project` writes as under FLOTILLA_IMPERSONATE_NAMESPACE. */
export function projectServiceAccount(namespace: string, project: string): string {
  return `system:serviceaccount:${namespace}:flotilla-project-${project}`;
}
