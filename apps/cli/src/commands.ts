import { type CommandEntry } from './command.js';

/**
 * Commands load lazily so that an offline call (`flotilla health …`) pays only for what it uses:
 * acceptance suites run thousands of them.
 */
export const COMMANDS: Record<string, CommandEntry> = {
  appsets: { summary: 'ApplicationSets on the hub', load: () => import('./commands/appsets.command.js') },
  audit: { summary: "the hub's hash-chained audit log", load: () => import('./commands/audit.command.js') },
  'break-glass': {
    summary: 'incident overrides on the hub: sync outside windows, pause self-heal, the record',
    load: () => import('./commands/break-glass.command.js'),
  },
  context: {
    summary: 'named hubs (URL and token) the hub-backed commands talk to: list, use, set, delete',
    load: () => import('./commands/context.command.js'),
  },
  login: {
    summary: 'check a hub and a token, and save them as the current context',
    load: async () => {
      const context = await import('./commands/context.command.js');
      return { run: context.runLogin, describe: context.describeLogin };
    },
  },
  clusters: { summary: "the hub's cluster inventory", load: () => import('./commands/clusters.command.js') },
  'chart-repositories': {
    summary: 'credentials for charts from Helm repositories and OCI registries (sealed, never shown)',
    load: () => import('./commands/chart-repositories.command.js'),
  },
  repositories: {
    summary: 'Git repositories the hub mirrors, and which commits must be signed (verified sources)',
    load: () => import('./commands/repositories.command.js'),
  },
  history: { summary: 'sync runs recorded by the hub', load: () => import('./commands/history.command.js') },
  operations: {
    summary: "a target's requested syncs (or one request's, --batch) with their state; cancel, terminate",
    load: () => import('./commands/operations.command.js'),
  },
  projects: {
    summary: 'projects on the hub: which repositories, destinations and sync windows their appsets get',
    load: () => import('./commands/projects.command.js'),
  },
  'fleet-sources': {
    summary: 'fleet repositories the hub reconciles its own objects from: status, errors, confirm',
    load: () => import('./commands/fleet-sources.command.js'),
  },
  export: {
    summary: "the hub's API-created objects as fleet-config YAML, ready to commit to a fleet repository",
    load: () => import('./commands/export.command.js'),
  },
  explain: {
    summary: 'why a cluster gets (or not) an appset: generators, selectors, values, revision, holds',
    load: () => import('./commands/explain.command.js'),
  },
  notifications: {
    summary: 'notification deliveries (what was sent, to whom, what failed), destinations and policies',
    load: () => import('./commands/notifications.command.js'),
  },
  sync: {
    summary: "ask a target's agent to sync it now, once (also with automated sync off)",
    load: () => import('./commands/sync.command.js'),
  },
  targets: { summary: 'per-cluster targets on the hub', load: () => import('./commands/targets.command.js') },
  tokens: { summary: "people's API tokens on the hub", load: () => import('./commands/tokens.command.js') },
  rollouts: {
    summary: 'fleet rollouts on the hub: status and why they wait, pause, resume, promote',
    load: () => import('./commands/rollouts.command.js'),
  },
  pins: {
    summary: 'rollback by pinning targets to a revision, even under auto-sync',
    load: () => import('./commands/pins.command.js'),
  },
  revert: {
    summary:
      'rollback by revert: write the commit reverting what changed an appset or a target since a revision',
    load: () => import('./commands/revert.command.js'),
  },
  rollback: {
    summary: 'pin a target to an earlier revision (= flotilla pins add)',
    load: async () => {
      const pins = await import('./commands/pins.command.js');
      return { run: pins.runAdd, describe: { options: pins.describe.options } };
    },
  },
  diff: {
    summary:
      'compare a desired object with a live one, as the agent does for drift; with TARGET: what a sync would change there (hub)',
    load: () => import('./commands/diff.command.js'),
  },
  demo: {
    summary: 'run a hub, simulated clusters with agents and an example Git repo',
    load: () => import('./commands/demo.command.js'),
  },
  generate: {
    summary: 'expand an ApplicationSet (Argo CD generators and templating) into parameter sets and targets',
    load: () => import('./commands/generate.command.js'),
  },
  health: {
    summary: 'assess the health of Kubernetes objects with Argo CD rules and custom Lua rules',
    load: () => import('./commands/health.command.js'),
  },
  plan: {
    summary:
      'what merging a change would do to the fleet, per cluster and appset: diffs, rollout steps, windows, guard, policies',
    load: () => import('./commands/plan.command.js'),
  },
  policy: {
    summary:
      'test manifests against Kubernetes ValidatingAdmissionPolicies offline (CEL), as CI on every pull request',
    load: () => import('./commands/policy.command.js'),
  },
  render: {
    summary: 'render an Application or an appset target as the hub would (Helm, Kustomize, plain YAML)',
    load: () => import('./commands/render.command.js'),
  },
  sim: {
    summary: 'serve simulated Kubernetes clusters (kubectl and client-node compatible) until interrupted',
    load: () => import('./commands/sim.command.js'),
  },
  validate: { summary: 'check a fleet repo offline', load: () => import('./commands/validate.command.js') },
  windows: {
    summary: 'evaluate sync windows (allow/deny, cron, time zone) for a target at given times',
    load: () => import('./commands/windows.command.js'),
  },
  completion: {
    summary: 'print the shell completion script: flotilla completion bash|zsh|fish',
    load: () => import('./commands/completion.command.js'),
  },
  __complete: {
    summary: 'the candidates for the completion scripts',
    hidden: true,
    // The registry is handed over, not imported: the completion module reads the commands it completes.
    load: async () => {
      const { runComplete } = await import('./commands/completion.command.js');
      return { run: (argv: string[]) => runComplete(COMMANDS, argv) };
    },
  },
};
