import { AGENT_FEATURES, AGENT_FEATURES_HEADER } from '@flotilla/contract';
import { createTestGitRepo, type TestGitRepo } from './test-git-repo.js';
import { hubCaller, startTestHub, type HubAnswer, type TestHub } from './test-hub.js';

export interface TwoClusterFleet {
  hub: TestHub;
  repo: TestGitRepo;
  /** The hub's shared admin token, for people-API calls made without `call`. */
  adminToken: string;
  /**
   * Environment for the built CLI run against this hub: its URL and admin token, and no config file
   * of whoever runs the tests.
   */
  cliEnv: Record<string, string>;
  /** Agent credentials by cluster name (each cluster registered as its agent would). */
  credentials: Record<'eu-1' | 'us-1', string>;
  /**
   * A people-API call with the admin token; `actor` (a bare name) goes in X-Flotilla-Actor, which
   * names the caller only beside the admin token (the audit log then says `user:<actor>`).
   */
  call<T = Record<string, unknown>>(
    method: string,
    path: string,
    body?: unknown,
    actor?: string,
  ): Promise<HubAnswer<T>>;
  /** An agent-API call with the cluster's credential. */
  agent<T = Record<string, unknown>>(
    cluster: 'eu-1' | 'us-1',
    method: string,
    path: string,
    body?: unknown,
    headers?: Record<string, string>,
  ): Promise<HubAnswer<T>>;
  close(): Promise<void>;
}

const FLEET_ADMIN_TOKEN = 'two-cluster-fleet-admin-token';

const CONFIGMAP =
  'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-config\ndata:\n  owner: platform\n';

/** The web app on both clusters, from the test repository. */
function webAppSet(repoUrl: string) {
  return {
    apiVersion: 'flotilla.dev/v1alpha1',
    kind: 'ApplicationSet',
    metadata: { name: 'web' },
    spec: {
      generators: [{ list: { elements: [{ cluster: 'eu-1' }, { cluster: 'us-1' }] } }],
      template: {
        metadata: { name: 'web-{{cluster}}' },
        spec: {
          source: { repoURL: repoUrl, targetRevision: 'main', path: 'app' },
          destination: { name: '{{cluster}}', namespace: 'web' },
        },
      },
    },
  };
}

/**
 * The hub on real PostgreSQL, Redis and Git with clusters eu-1 and us-1 registered as their agents
 * would, and the `web` appset rendered onto both (targets web-eu-1, web-us-1 in namespace web).
 * Used by the sync-window and break-glass specs, which speak the agent protocol by hand.
 */
export async function startTwoClusterFleet(env: Record<string, string> = {}): Promise<TwoClusterFleet> {
  const repo = createTestGitRepo({ 'app/config.yaml': CONFIGMAP });
  let hub: TestHub;
  try {
    hub = await startTestHub({ FLOTILLA_ADMIN_TOKEN: FLEET_ADMIN_TOKEN, ...env });
  } catch (e) {
    repo.remove();
    throw e;
  }
  const send = hubCaller(() => hub);
  const credentials = { 'eu-1': '', 'us-1': '' };
  const fleet: TwoClusterFleet = {
    hub,
    repo,
    credentials,
    adminToken: FLEET_ADMIN_TOKEN,
    cliEnv: {
      FLOTILLA_HUB_URL: hub.url,
      FLOTILLA_TOKEN: FLEET_ADMIN_TOKEN,
      FLOTILLA_CONFIG: '/nonexistent/flotilla.yaml',
    },
    call: (method, path, body, actor) =>
      send(method, path, body, {
        authorization: `Bearer ${FLEET_ADMIN_TOKEN}`,
        ...(actor && { 'x-flotilla-actor': actor }),
      }),
    agent: (cluster, method, path, body, headers = {}) =>
      send(method, path, body, {
        authorization: `Bearer ${credentials[cluster]}`,
        // Spoken as a current agent: it announces every feature (a spec may send the header empty).
        [AGENT_FEATURES_HEADER]: AGENT_FEATURES.join(','),
        ...headers,
      }),
    close: async () => {
      await hub.close();
      repo.remove();
    },
  };
  try {
    for (const name of ['eu-1', 'us-1'] as const) {
      const created = await fleet.call<{ bootstrapToken: string }>('POST', '/api/v1/clusters', { name });
      if (created.status !== 201) throw new Error(`cluster ${name}: ${created.status}`);
      const registered = await fleet.call<{ credential: string }>('POST', '/api/agent/v1/register', {
        clusterName: name,
        bootstrapToken: created.body.bootstrapToken,
      });
      if (registered.status !== 200) throw new Error(`register ${name}: ${registered.status}`);
      credentials[name] = registered.body.credential;
    }
    const applied = await fleet.call('POST', '/api/v1/appsets', webAppSet(repo.url));
    if (applied.status !== 201) throw new Error(`appset: ${applied.status} ${JSON.stringify(applied.body)}`);
    // Rendered: both targets have a bundle, so both appear in their cluster's assignments.
    const deadline = Date.now() + 60_000;
    for (;;) {
      const targets = await fleet.call<{ bundleDigest: string | null }[]>(
        'GET',
        '/api/v1/targets?appSet=web',
      );
      if (targets.body.length === 2 && targets.body.every((t) => t.bundleDigest)) break;
      if (Date.now() > deadline) throw new Error('the web appset was not rendered within 60 s');
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  } catch (e) {
    await fleet.close();
    throw e;
  }
  return fleet;
}
