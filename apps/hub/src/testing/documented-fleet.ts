import { startTwoClusterFleet, type TwoClusterFleet } from './two-cluster-fleet.js';

/**
 * The two-cluster fleet with one of every resource the people API lists, each made through the API
 * itself (project, window, pin, token, break-glass, repository, chart credentials, fleet source,
 * notification destination and policy), so that every listing answers something real. Used by the
 * OpenAPI specs, which check those answers against the document.
 */
export async function startDocumentedFleet(): Promise<
  TwoClusterFleet & { breakGlassId: number; batchId: string }
> {
  // A secrets key: destinations, repository and chart credentials are sealed with it.
  const fleet = await startTwoClusterFleet({ FLOTILLA_SECRETS_KEY: 'ef'.repeat(32) });
  try {
    const make = async <T>(path: string, body: unknown, method = 'POST'): Promise<T> => {
      const answer = await fleet.call<T>(method, path, body);
      if (answer.status >= 300) throw new Error(`${path}: ${answer.status} ${JSON.stringify(answer.body)}`);
      return answer.body;
    };
    await make('/api/v1/projects', {
      apiVersion: 'flotilla.dev/v1alpha1',
      kind: 'Project',
      metadata: { name: 'team-a' },
      spec: { sourceRepos: ['*'], destinations: [{ cluster: 'eu-1', namespace: 'team-a' }] },
    });
    await make('/api/v1/windows', {
      name: 'nightly',
      kind: 'deny',
      schedule: '0 22 * * *',
      duration: '1h',
      clusters: ['*'],
      reason: 'nightly freeze',
    });
    await make('/api/v1/targets/web-eu-1/pin', { revision: 'main', reason: 'hold for the test' });
    await make('/api/v1/tokens', { name: 'ci', role: 'viewer', expiresInDays: 30 });
    const opened = await make<{ id: number }>('/api/v1/break-glass', {
      scope: 'cluster',
      name: 'us-1',
      reason: 'incident',
      durationMinutes: 30,
      pauseSelfHeal: true,
    });
    await make('/api/v1/repositories', {
      url: 'https://git.example.com/private.git',
      credentials: { type: 'https-token', username: 'ci', token: 'a-token' },
    });
    await make(
      '/api/v1/chart-repositories',
      { url: 'https://charts.example.com', username: 'ci', password: 'pw' },
      'PUT',
    );
    await make('/api/v1/fleet-sources', { repoUrl: fleet.repo.url, path: 'fleet' });
    await make('/api/v1/notifications/destinations', {
      name: 'hook',
      type: 'webhook',
      url: 'https://hooks.example.com/flotilla',
      secret: 'a-secret-of-sixteen-or-more',
    });
    await make('/api/v1/notifications/policies', {
      apiVersion: 'flotilla.dev/v1alpha1',
      kind: 'NotificationPolicy',
      metadata: { name: 'tell' },
      spec: { triggers: ['break-glass-opened'], destinations: ['hook'] },
    });
    const bulk = await make<{ batchId: string }>('/api/v1/targets/sync', {
      appSet: 'web',
      reason: 'the test',
    });
    return { ...fleet, breakGlassId: opened.id, batchId: bulk.batchId };
  } catch (e) {
    await fleet.close();
    throw e;
  }
}
