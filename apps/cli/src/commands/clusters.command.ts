import { type CommandDescription } from '../command.js';
import { execFile } from 'node:child_process';
import { type ClusterView, type RegisteredCluster } from '../fleet/hub-client.js';
import { agentManifests, agentManifestsYaml, type AgentInstall } from './agent-manifests.js';
import { UsageError } from '../offline/offline-command.js';
import {
  age,
  columnsTable,
  expectName,
  expectPositionals,
  formatFields,
  printResult,
  describeHubCommand,
  runHubCommand,
  stringValue,
  stringValues,
  type Column,
  type HubCommandSpec,
} from './hub-command.js';

const SPEC: HubCommandSpec = {
  name: 'clusters',
  subcommands: ['list', 'get', 'add', 'token', 'revoke'],
  listings: ['', 'list'],
  usage: [
    'usage: flotilla clusters [list]',
    '       flotilla clusters get NAME',
    '       flotilla clusters add NAME [--label k=v]... [--server URL]',
    '                             [--print-manifests | --install] [--agent-hub-url URL] [--image IMAGE]',
    '                             [--namespaces NS[,NS]...] [--impersonate PROJECT[,PROJECT]...]',
    '       flotilla clusters token NAME',
    '       flotilla clusters revoke NAME',
    '',
    "The hub's cluster inventory; `list -o wide` adds the API server, the agent's features, the",
    "cluster's Kubernetes version and the targets out of sync and degraded. `add` prints the cluster's single-use bootstrap token (shown only",
    'then) and how to start its agent; `token` issues a new one to re-register an existing cluster;',
    "`revoke` stops the agent's credential from working at once.",
    '',
    '`add --print-manifests` prints, instead, everything to `kubectl apply -f -` on the new cluster',
    '(the namespace, the bootstrap Secret, the agent with its RBAC; -o json: one List); `--install`',
    "applies it with kubectl and the current kubeconfig. The hub never gets the cluster's credentials.",
    "--agent-hub-url: the hub's URL as the cluster reaches it (default: --hub); --image: the agent image.",
    '--namespaces: a namespace-scoped agent, with a Role in each of these existing namespaces instead of',
    'a ClusterRole; it refuses cluster-scoped objects and objects in other namespaces.',
    "--impersonate: the agent writes each target as its project's ServiceAccount flotilla-project-PROJECT",
    '(created, and the only accounts it may impersonate); its own rights become read-only.',
  ].join('\n'),
  options: {
    label: { type: 'string', short: 'l', multiple: true },
    server: { type: 'string' },
    'print-manifests': { type: 'boolean' },
    install: { type: 'boolean' },
    'agent-hub-url': { type: 'string' },
    image: { type: 'string' },
    namespaces: { type: 'string' },
    impersonate: { type: 'string' },
  },
};

export const describe: CommandDescription = describeHubCommand(SPEC);

export function run(argv: string[]): Promise<number> {
  return runHubCommand(argv, SPEC, async ({ values, positionals, output, client }) => {
    const [sub = 'list', ...rest] = positionals;
    const addOnly = [
      'label',
      'server',
      'print-manifests',
      'install',
      'agent-hub-url',
      'image',
      'namespaces',
      'impersonate',
    ];
    if (sub !== 'add' && addOnly.some((o) => values[o] !== undefined)) {
      throw new UsageError(
        `--${addOnly.find((o) => values[o] !== undefined)} applies to 'clusters add' only`,
      );
    }
    switch (sub) {
      case 'list': {
        expectPositionals(rest, [], 'flotilla clusters [list]');
        const clusters = await client.clusters();
        printResult(clusters, output, (wide) => clusterTable(clusters, wide));
        return 0;
      }
      case 'get': {
        const name = expectName(rest, 'flotilla clusters get NAME');
        const cluster = await client.cluster(name);
        printResult(cluster, output, () => clusterFields(cluster));
        return 0;
      }
      case 'add': {
        const name = expectName(rest, 'flotilla clusters add NAME [--label k=v]...');
        const labels = parseLabels(stringValues(values['label']));
        const server = stringValue(values['server']);
        const manifests = manifestOptions(values, client.baseUrl);
        // Checked before the hub is asked, so that a usage error registers nothing.
        const added = await client.registerCluster(name, labels, server ? { server } : {});
        if (manifests === null) {
          printResult(added, output, () => tokenText(added, client.baseUrl, `Cluster ${name} added.`));
          return 0;
        }
        const install: AgentInstall = {
          ...manifests.install,
          cluster: name,
          bootstrapToken: added.bootstrapToken,
        };
        if (manifests.mode === 'print') {
          process.stdout.write(
            output === 'json'
              ? `${JSON.stringify({ apiVersion: 'v1', kind: 'List', items: agentManifests(install) })}\n`
              : agentManifestsYaml(install),
          );
          console.error(
            `Cluster ${name} added; its bootstrap token (single use, expires ${added.expiresAt}) is in the manifests on stdout: kubectl apply -f - them on the cluster.`,
          );
          return 0;
        }
        const applied = await kubectlApply(agentManifestsYaml(install));
        if (applied.code !== 0) {
          console.error(
            `flotilla clusters: cluster ${name} is added on the hub, but kubectl apply failed (${applied.stderr.trim().split('\n').pop() ?? ''}); fix the kubeconfig, then: flotilla clusters token ${name}`,
          );
          return 1;
        }
        process.stdout.write(
          `Cluster ${name} added and its agent installed with the current kubeconfig:\n${applied.stdout}`,
        );
        return 0;
      }
      case 'token': {
        const name = expectName(rest, 'flotilla clusters token NAME');
        const issued = await client.issueBootstrapToken(name);
        printResult(issued, output, () =>
          tokenText(issued, client.baseUrl, `Issued a new bootstrap token for cluster ${name}.`),
        );
        return 0;
      }
      case 'revoke': {
        const name = expectName(rest, 'flotilla clusters revoke NAME');
        const cluster = await client.revokeCredential(name);
        printResult(cluster, output, () =>
          [
            `Revoked the agent credential of cluster ${cluster.name}; its agent can no longer reach the hub.`,
            `To re-register it: flotilla clusters token ${cluster.name}`,
          ].join('\n'),
        );
        return 0;
      }
      default:
        throw new UsageError(`unknown sub-command '${sub}'; expected list, get, add, token or revoke`);
    }
  });
}

/** --print-manifests / --install and what they take; null for a plain `add`. */
function manifestOptions(
  values: Record<string, unknown>,
  hubUrl: string,
): { mode: 'print' | 'install'; install: Omit<AgentInstall, 'cluster' | 'bootstrapToken'> } | null {
  const print = values['print-manifests'] === true;
  const install = values['install'] === true;
  const agentHubUrl = stringValue(values['agent-hub-url'] as string | undefined);
  const image = stringValue(values['image'] as string | undefined);
  const namespacesText = stringValue(values['namespaces'] as string | undefined);
  const impersonateText = stringValue(values['impersonate'] as string | undefined);
  if (print && install) throw new UsageError('--print-manifests and --install exclude each other');
  if (!print && !install) {
    if (
      agentHubUrl !== undefined ||
      image !== undefined ||
      namespacesText !== undefined ||
      impersonateText !== undefined
    ) {
      throw new UsageError(
        '--agent-hub-url, --image, --namespaces and --impersonate apply with --print-manifests or --install only',
      );
    }
    return null;
  }
  const url = agentHubUrl ?? hubUrl;
  let parsed: URL | null = null;
  try {
    parsed = new URL(url);
  } catch {
    // reported below
  }
  if (!parsed || (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')) {
    throw new UsageError(`--agent-hub-url must be an http(s) URL, not '${url}'`);
  }
  if (image !== undefined && !/^[a-z0-9][a-z0-9._\-/:@]*$/i.test(image)) {
    throw new UsageError(`--image must be an image reference such as ghcr.io/org/agent:1.0, not '${image}'`);
  }
  const namespaces =
    namespacesText === undefined ? undefined : parseNames('--namespaces', 'namespace', namespacesText);
  const impersonateProjects =
    impersonateText === undefined ? undefined : parseNames('--impersonate', 'project', impersonateText);
  return {
    mode: print ? 'print' : 'install',
    install: {
      hubUrl: url.replace(/\/$/, ''),
      ...(image !== undefined ? { image } : {}),
      ...(namespaces !== undefined ? { namespaces } : {}),
      ...(impersonateProjects !== undefined ? { impersonateProjects } : {}),
    },
  };
}

/**
 * `a,b`: a namespace-scoped agent's namespaces, or the projects whose ServiceAccounts it writes as;
 * each a DNS label, as a namespace or a ServiceAccount name needs.
 */
function parseNames(flag: string, what: string, text: string): string[] {
  const names = text.split(',').map((n) => n.trim());
  for (const name of names) {
    if (!/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(name))
      throw new UsageError(
        `${flag} must be ${what} names separated by commas (lower-case letters, digits, '-'), not '${name}'`,
      );
  }
  return [...new Set(names)];
}

/** `kubectl apply --server-side` of a YAML stream with the current kubeconfig (KUBECONFIG, context). */
function kubectlApply(yaml: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile(
      'kubectl',
      ['apply', '--server-side', '--field-manager=flotilla-cli', '-f', '-'],
      (err, stdout, stderr) =>
        resolve({
          code: err ? (typeof err.code === 'number' ? err.code : 1) : 0,
          stdout,
          stderr: stderr || (err?.message ?? ''),
        }),
    );
    child.stdin?.end(yaml);
  });
}

/** `k=v` pairs; a key may not be empty or repeated, a value may be empty (as in Kubernetes). */
export function parseLabels(pairs: string[]): Record<string, string> {
  const labels: Record<string, string> = {};
  for (const pair of pairs) {
    const eq = pair.indexOf('=');
    if (eq <= 0) throw new UsageError(`--label must be key=value, not '${pair}'`);
    const key = pair.slice(0, eq);
    if (key in labels) throw new UsageError(`--label ${key} is given twice`);
    labels[key] = pair.slice(eq + 1);
  }
  return labels;
}

function labelText(labels: Record<string, string>): string {
  const pairs = Object.entries(labels)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([k, v]) => `${k}=${v}`);
  return pairs.length ? pairs.join(',') : '-';
}

const CLUSTER_COLUMNS: Column<ClusterView>[] = [
  { header: 'NAME', cell: (c) => c.name },
  // A cluster whose agent has not reported its API server yet has '' (the hub's default).
  { header: 'SERVER', cell: (c) => c.server || '-', wide: true },
  { header: 'REGISTERED', cell: (c) => (c.registered ? 'yes' : 'no') },
  { header: 'AGENT', cell: (c) => c.agentVersion ?? '-' },
  { header: 'FEATURES', cell: (c) => (c.agentFeatures ?? []).join(',') || '-', wide: true },
  { header: 'KUBE VERSION', cell: (c) => c.capabilities?.kubeVersion ?? '-', wide: true },
  { header: 'LAST SEEN', cell: (c) => age(c.lastSeenAt) },
  { header: 'TARGETS', cell: (c) => String(c.targets.total) },
  { header: 'SYNCED', cell: (c) => String(c.targets.synced) },
  { header: 'OUT OF SYNC', cell: (c) => String(c.targets.outOfSync), wide: true },
  { header: 'HEALTHY', cell: (c) => String(c.targets.healthy) },
  { header: 'DEGRADED', cell: (c) => String(c.targets.degraded), wide: true },
  { header: 'LABELS', cell: (c) => labelText(c.labels) },
];

export function clusterTable(clusters: ClusterView[], wide = false): string {
  return columnsTable(CLUSTER_COLUMNS, clusters, wide);
}

function clusterFields(c: ClusterView): string {
  const t = c.targets;
  return formatFields([
    ['Name', c.name],
    ['Server', c.server ?? '-'],
    ['Labels', labelText(c.labels)],
    ['Annotations', labelText(c.annotations)],
    ['Registered', c.registered ? 'yes' : 'no'],
    ['Agent version', c.agentVersion ?? '-'],
    ['Agent features', (c.agentFeatures ?? []).join(', ') || 'none announced'],
    ['Last seen', c.lastSeenAt ? `${c.lastSeenAt} (${age(c.lastSeenAt)} ago)` : 'never'],
    ['Created', c.createdAt],
    [
      'Targets',
      `${t.total} (synced ${t.synced}, out of sync ${t.outOfSync}, unknown ${t.unknown}; ` +
        `healthy ${t.healthy}, degraded ${t.degraded})`,
    ],
  ]);
}

function tokenText(issued: RegisteredCluster, hubUrl: string, headline: string): string {
  const name = issued.cluster.name;
  return [
    headline,
    `Bootstrap token (single use, expires ${issued.expiresAt}; it is not shown again):`,
    `  ${issued.bootstrapToken}`,
    '',
    'Start the agent inside the cluster (or with a kubeconfig for it) with:',
    `  FLOTILLA_HUB_URL=${hubUrl.replace(/\/$/, '')} FLOTILLA_CLUSTER_NAME=${name} \\`,
    `  FLOTILLA_BOOTSTRAP_TOKEN=${issued.bootstrapToken} flotilla-agent`,
    'The agent trades the token for its own credential on first contact.',
  ].join('\n');
}
