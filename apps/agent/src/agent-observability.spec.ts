import { createServer } from 'node:net';
import { once } from 'node:events';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type KubeObject } from '@flotilla/contract';
import { AgentStartError } from './agent.js';
import { AgentHarness, loadFixture, pollOptions as poll } from './testing/agent-harness.js';

const manifests = loadFixture('bundle-web.yaml');

interface EventObject {
  metadata: { name: string; namespace: string };
  involvedObject: { apiVersion: string; kind: string; name: string; namespace?: string };
  reason: string;
  message: string;
  type: string;
  source: { component: string; host?: string };
  reportingComponent: string;
  count: number;
}

/** What `kubectl get events` and the issue ask of the cluster side: Events, probes and /metrics. */
describe('agent: Kubernetes Events, /healthz, /readyz and /metrics (#14 what people see)', () => {
  let h: AgentHarness;
  let statusUrl: string;
  beforeAll(async () => {
    h = await AgentHarness.start('observed');
  });
  afterAll(async () => {
    await h.stop();
  });

  async function events(namespace: string): Promise<EventObject[]> {
    const list = await h.k8s.list('v1', 'Event', namespace);
    return (JSON.parse(JSON.stringify(list.items)) as EventObject[]).filter(
      (e) => e.source?.component === 'flotilla-agent',
    );
  }
  const withReason = async (namespace: string, reason: string): Promise<EventObject[]> =>
    (await events(namespace)).filter((e) => e.reason === reason);

  async function metric(line: string): Promise<number | undefined> {
    const text = await (await fetch(`${statusUrl}/metrics`)).text();
    const found = text.split('\n').find((l) => l.startsWith(`${line} `));
    return found === undefined ? undefined : Number(found.split(' ').pop());
  }

  it('a sync writes a Synced Event on each object it applied, from flotilla-agent', async () => {
    h.hub.setAssignments([h.assignment({ bundleDigest: h.hub.addBundle(manifests) })]);
    const agent = await h.runAgent({ statusPort: 0 });
    statusUrl = agent.statusUrl ?? '';
    expect(statusUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    await expect.poll(() => h.syncs().length, poll).toBe(1);
    await expect.poll(async () => (await withReason('shop', 'Synced')).length, poll).toBe(2);
    const synced = await withReason('shop', 'Synced');
    expect(synced.map((e) => e.involvedObject).sort((a, b) => a.kind.localeCompare(b.kind))).toEqual([
      { apiVersion: 'v1', kind: 'ConfigMap', name: 'web-config', namespace: 'shop' },
      { apiVersion: 'apps/v1', kind: 'Deployment', name: 'web', namespace: 'shop' },
    ]);
    for (const e of synced) {
      expect(e).toMatchObject({
        type: 'Normal',
        source: { component: 'flotilla-agent', host: 'observed' },
        reportingComponent: 'flotilla-agent',
        count: 1,
      });
      expect(e.message).toContain('target web-east at revision rev-1');
      expect(e.metadata.name).toMatch(new RegExp(`^${e.involvedObject.name}\\.[0-9a-f]{16}$`));
    }
    // A cluster-scoped object's Events live in `default`, as client-go's recorder puts them.
    await expect
      .poll(async () => (await withReason('default', 'Synced')).map((e) => e.involvedObject), poll)
      .toEqual([{ apiVersion: 'v1', kind: 'Namespace', name: 'shop' }]);
  });

  it('serves /healthz, /readyz and /metrics with syncs, queue depth, watches, cache and hub round trips', async () => {
    expect((await fetch(`${statusUrl}/healthz`)).status).toBe(200);
    const ready = await fetch(`${statusUrl}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({
      status: 'ok',
      checks: { credential: 'ok', assignments: 'ok' },
      hub: 'ok',
    });
    expect(await metric('flotilla_agent_syncs_total{trigger="auto",outcome="Succeeded"}')).toBe(1);
    await expect.poll(() => metric('flotilla_agent_report_queue_batches'), poll).toBe(0);
    // Watches start once the sync report is queued.
    await expect.poll(() => metric('flotilla_agent_watches'), poll).toBe(3);
    expect(await metric('flotilla_agent_cached_objects')).toBeGreaterThanOrEqual(3);
    expect(await metric('flotilla_agent_targets')).toBe(1);
    expect(
      await metric('flotilla_agent_hub_request_duration_seconds_count{endpoint="register",outcome="ok"}'),
    ).toBe(1);
    expect(
      await metric('flotilla_agent_hub_request_duration_seconds_count{endpoint="reports",outcome="ok"}'),
    ).toBeGreaterThanOrEqual(1);
    expect(await metric('flotilla_agent_kube_events{result="written"}')).toBe(3);
    expect(await metric('process_resident_memory_bytes')).toBeGreaterThan(0);
    expect((await fetch(`${statusUrl}/nothing`)).status).toBe(404);
    expect((await fetch(`${statusUrl}/metrics`, { method: 'POST' })).status).toBe(405);
  });

  it('a heal writes a Healed Event naming the writer, and counts a heal', async () => {
    await h.edit('Deployment', 'web', { spec: { replicas: 5 } });
    await expect.poll(() => h.drifts('healed').length, poll).toBe(1);
    await expect.poll(async () => (await withReason('shop', 'Healed')).length, poll).toBe(1);
    const [healed] = await withReason('shop', 'Healed');
    expect(healed).toMatchObject({
      type: 'Normal',
      involvedObject: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'web', namespace: 'shop' },
    });
    expect(healed?.message).toContain('by kubectl-edit');
    expect(healed?.message).toContain('/spec/replicas');
    expect(await metric('flotilla_agent_heals_total')).toBe(1);
    expect(await metric('flotilla_agent_drift_total{state="detected"}')).toBe(1);
    expect(await metric('flotilla_agent_syncs_total{trigger="self-heal",outcome="Succeeded"}')).toBe(1);
  });

  it('a prune writes a Pruned Event on the object it deleted', async () => {
    const withoutConfig = manifests.filter((m) => m.kind !== 'ConfigMap');
    h.hub.setAssignments([h.assignment({ bundleDigest: h.hub.addBundle(withoutConfig), revision: 'rev-2' })]);
    await expect.poll(async () => (await withReason('shop', 'Pruned')).length, poll).toBe(1);
    const [pruned] = await withReason('shop', 'Pruned');
    expect(pruned).toMatchObject({
      type: 'Normal',
      involvedObject: { apiVersion: 'v1', kind: 'ConfigMap', name: 'web-config', namespace: 'shop' },
    });
    expect(pruned?.message).toContain('no longer declared at revision rev-2');
  });

  it('an object that fails to sync gets a SyncFailed Warning with the API server’s reason', async () => {
    // A kind whose CRD is not installed: the API server has no such resource. Cluster-scoped as far
    // as anyone can tell, so its Event goes to `default`.
    const broken: KubeObject = {
      apiVersion: 'example.com/v1',
      kind: 'Widget',
      metadata: { name: 'gizmo' },
      spec: { size: 1 },
    };
    h.hub.setAssignments([
      h.assignment({ bundleDigest: h.hub.addBundle([...manifests, broken]), revision: 'rev-3' }),
    ]);
    await expect.poll(() => h.syncs().find((s) => s.revision === 'rev-3'), poll).toBeDefined();
    await expect
      .poll(async () => (await withReason('default', 'SyncFailed')).length, poll)
      .toBeGreaterThan(0);
    const [failed] = await withReason('default', 'SyncFailed');
    expect(failed).toMatchObject({
      type: 'Warning',
      involvedObject: { apiVersion: 'example.com/v1', kind: 'Widget', name: 'gizmo' },
    });
    expect(failed?.message).toContain('failed to sync for target web-east at revision rev-3');
    expect(failed?.message).toContain('the cluster does not serve example.com/v1');
    const failedSync = h.syncs().find((s) => s.revision === 'rev-3');
    expect(failedSync?.outcome).not.toBe('Succeeded');
  });
});

describe('agent: readiness before it can reconcile, and a status port that is taken', () => {
  let h: AgentHarness;
  beforeAll(async () => {
    h = await AgentHarness.start('unready');
  });
  afterAll(async () => {
    await h.stop();
  });

  it('is live but not ready while it has no credential and no assignments (the hub unreachable)', async () => {
    const unused = createServer();
    unused.listen(0, '127.0.0.1');
    await once(unused, 'listening');
    const port = (unused.address() as { port: number }).port;
    unused.close();
    const agent = await h.runAgent({
      statusPort: 0,
      hubUrl: `http://127.0.0.1:${port}`,
      stateDir: join(h.dir, 'unready'),
    });
    expect((await fetch(`${agent.statusUrl}/healthz`)).status).toBe(200);
    await expect
      .poll(async () => {
        const res = await fetch(`${agent.statusUrl}/readyz`);
        return { status: res.status, body: await res.json() };
      }, poll)
      .toEqual({
        status: 503,
        body: {
          status: 'not-ready',
          checks: {
            credential: 'no credential yet (registering with the bootstrap token)',
            assignments: 'waiting for the first assignments from the hub',
          },
          hub: 'last call failed: hub-unreachable',
        },
      });
    await agent.stop();
    await expect(fetch(`${agent.statusUrl}/healthz`)).rejects.toThrow();
  });

  it('refuses to start on a status port already in use, naming FLOTILLA_STATUS_PORT', async () => {
    const taken = createServer();
    taken.listen(0, '127.0.0.1');
    await once(taken, 'listening');
    const port = (taken.address() as { port: number }).port;
    try {
      const started = h.runAgent({ statusPort: port, stateDir: join(h.dir, 'taken') });
      await expect(started).rejects.toBeInstanceOf(AgentStartError);
      await expect(started).rejects.toMatchObject({
        path: 'FLOTILLA_STATUS_PORT',
        message: expect.stringContaining(`127.0.0.1:${port}: EADDRINUSE`) as unknown,
      });
    } finally {
      taken.close();
    }
  });
});
