import { randomUUID } from 'node:crypto';
import type { Assignment } from '@flotilla/contract';
import type { HubAnswer } from './test-hub.js';

type HubCall = <T = Record<string, unknown>>(
  method: string,
  path: string,
  body?: unknown,
  headers?: Record<string, string>,
) => Promise<HubAnswer<T>>;

/**
 * Clusters whose agents a spec plays by hand (the agent protocol spoken over HTTP, nothing
 * applied), for specs about what the hub does with many agents' reports: each cluster is
 * registered through the people API and trades its bootstrap token for its own credential,
 * `batch` clusters at a time, as a fleet's agents would come up.
 */
export async function registerHandAgents(
  call: HubCall,
  clusters: readonly { name: string; labels: Record<string, string> }[],
  batch = 10,
): Promise<Map<string, string>> {
  const credentials = new Map<string, string>();
  for (let i = 0; i < clusters.length; i += batch)
    await Promise.all(
      clusters.slice(i, i + batch).map(async ({ name, labels }) => {
        const created = await call<{ bootstrapToken: string }>('POST', '/api/v1/clusters', { name, labels });
        if (created.status !== 201) throw new Error(`registering ${name}: ${created.status}`);
        const registered = await call<{ credential: string }>('POST', '/api/agent/v1/register', {
          clusterName: name,
          bootstrapToken: created.body.bootstrapToken,
        });
        if (registered.status !== 200) throw new Error(`${name}'s agent registering: ${registered.status}`);
        credentials.set(name, registered.body.credential);
      }),
    );
  return credentials;
}

/** What an agent reports after applying an assignment: a Succeeded sync, then the health it judged. */
export function syncedReports(
  a: Pick<Assignment, 'targetId' | 'revision' | 'bundleDigest'>,
  health: string,
  message = '',
): Record<string, unknown>[] {
  const at = new Date().toISOString();
  const base = { targetId: a.targetId, at };
  return [
    {
      ...base,
      type: 'sync',
      id: randomUUID(),
      revision: a.revision,
      bundleDigest: a.bundleDigest,
      trigger: 'auto',
      outcome: 'Succeeded',
      startedAt: at,
      finishedAt: at,
    },
    { ...base, type: 'health', id: randomUUID(), status: health, ...(message && { message }) },
  ];
}

/**
 * An appset over every cluster labelled `fleet: web`, one target each from `path` of `repoUrl`,
 * rolled out ring by ring: one step per ring (clusters labelled `ring: <name>`), all at once within
 * a step, ten minutes each.
 */
export function ringAppSet(repoUrl: string, rings: readonly string[], path = 'app'): Record<string, unknown> {
  return {
    apiVersion: 'flotilla.dev/v1alpha1',
    kind: 'ApplicationSet',
    metadata: { name: 'web' },
    spec: {
      generators: [{ clusters: { selector: { matchLabels: { fleet: 'web' } } } }],
      template: {
        metadata: { name: 'web-{{name}}' },
        spec: {
          source: { repoURL: repoUrl, targetRevision: 'main', path },
          destination: { name: '{{name}}', namespace: 'web' },
        },
      },
      rollout: {
        steps: rings.map((ring) => ({
          name: ring,
          selector: { matchLabels: { ring } },
          maxUnavailable: '100%',
          progressDeadline: '10m',
        })),
      },
    },
  };
}
