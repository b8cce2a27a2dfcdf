// What a chart rendered for a cluster sees as `.Capabilities`, and how an expansion tells they moved.
import type { Capabilities } from '@flotilla/manifests';
import type { Cluster } from '../generated/prisma/client.js';

/**
 * What a chart rendered for cluster `c` sees as `.Capabilities`: what its agent last reported of
 * discovery, else `fallback` (HELM_KUBE_VERSION) until it reports.
 */
export function capabilitiesOf(
  c: Pick<Cluster, 'kubeVersion' | 'apiVersions'>,
  fallback: Capabilities,
): Capabilities {
  return c.kubeVersion ? { kubeVersion: c.kubeVersion, apiVersions: [...c.apiVersions] } : fallback;
}

/** A cluster's reported capabilities as one comparable string. */
export function capabilitiesKey(c: Pick<Cluster, 'kubeVersion' | 'apiVersions'>): string {
  return JSON.stringify([c.kubeVersion, c.apiVersions]);
}
