import { stringify } from 'yaml';

/**
 * A kubeconfig for one simulated cluster. `insecure-skip-tls-verify` is required because
 * client-node refuses plain http servers without it; kubectl accepts it too.
 */
export function kubeconfigFor(name: string, url: string): string {
  return stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name, cluster: { server: url, 'insecure-skip-tls-verify': true } }],
    contexts: [{ name, context: { cluster: name, user: name, namespace: 'default' } }],
    'current-context': name,
    preferences: {},
    users: [{ name, user: { token: `sim-token-${name}` } }],
  });
}
