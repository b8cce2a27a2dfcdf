import { type ClusterView, type RegisteredCluster } from '../fleet/hub-client.js';
import { UsageError } from '../offline/offline-command.js';
import {
  age,
  expectName,
  expectPositionals,
  formatFields,
  formatTable,
  printResult,
  runHubCommand,
  stringValue,
  stringValues,
  type HubCommandSpec,
} from './hub-command.js';

const SPEC: HubCommandSpec = {
  name: 'clusters',
  usage: [
    'usage: flotilla clusters [list]',
    '       flotilla clusters get NAME',
    '       flotilla clusters add NAME [--label k=v]... [--server URL]',
    '       flotilla clusters token NAME',
    '       flotilla clusters revoke NAME',
    '',
    "The hub's cluster inventory. `add` prints the cluster's single-use bootstrap token (shown only",
    'then) and how to start its agent; `token` issues a new one to re-register an existing cluster;',
    "`revoke` stops the agent's credential from working at once.",
  ].join('\n'),
  options: {
    label: { type: 'string', short: 'l', multiple: true },
    server: { type: 'string' },
  },
};

export function run(argv: string[]): Promise<number> {
  return runHubCommand(argv, SPEC, async ({ values, positionals, output, client }) => {
    const [sub = 'list', ...rest] = positionals;
    if (sub !== 'add' && (values['label'] !== undefined || values['server'] !== undefined)) {
      throw new UsageError(`--label and --server apply to 'clusters add' only`);
    }
    switch (sub) {
      case 'list': {
        expectPositionals(rest, [], 'flotilla clusters [list]');
        const clusters = await client.clusters();
        printResult(clusters, output, () => clusterTable(clusters));
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
        const added = await client.registerCluster(name, labels, server ? { server } : {});
        printResult(added, output, () => tokenText(added, client.baseUrl, `Cluster ${name} added.`));
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

function clusterTable(clusters: ClusterView[]): string {
  return formatTable(
    ['NAME', 'REGISTERED', 'AGENT', 'LAST SEEN', 'TARGETS', 'SYNCED', 'HEALTHY', 'LABELS'],
    clusters.map((c) => [
      c.name,
      c.registered ? 'yes' : 'no',
      c.agentVersion ?? '-',
      age(c.lastSeenAt),
      String(c.targets.total),
      String(c.targets.synced),
      String(c.targets.healthy),
      labelText(c.labels),
    ]),
  );
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
