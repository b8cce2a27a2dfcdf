import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig, KubernetesObjectApi, PatchStrategy } from '@kubernetes/client-node';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadAgentConfig, startAgent, type Agent } from '@flotilla/agent';
import { createTestGitRepo, startTestHub, type TestGitRepo, type TestHub } from '@flotilla/hub/testing';
import { startSimCluster, type SimClusterHandle } from '@flotilla/kube-sim';

/**
 * Issue #17, seen by a new user: a break-glass that paused self-heal is closed while a deny window
 * is active. The manual change must be healed once the window allows it, and until then history
 * must say which window holds it. A hub on PostgreSQL and Redis following a fleet repository, a real
 * agent on a simulated cluster whose clock is set just before the window (the window is evaluated by
 * the agent, on its own clock).
 */

const configMap = (value: string) =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  greeting: ${value}\n`;
const appSet = (repoUrl: string) => `apiVersion: flotilla.dev/v1alpha1
kind: ApplicationSet
metadata:
  name: web
spec:
  generators:
    - list:
        elements:
          - cluster: east
  template:
    metadata:
      name: 'web-{{cluster}}'
    spec:
      source:
        repoURL: ${repoUrl}
        targetRevision: main
        path: app
      destination:
        name: '{{cluster}}'
        namespace: web
      syncPolicy:
        automated:
          selfHeal: true
`;
/** On the agent's clock the run starts at 09:59:25; the freeze holds 10:00:00 to 10:00:20. */
const AGENT_START = Date.parse('2026-06-01T09:59:25.000Z');
const freeze = {
  name: 'eu-night-freeze',
  kind: 'deny',
  schedule: '0 10 * * *',
  duration: '20s',
  clusters: ['*'],
  reason: 'night freeze',
};

let hub: TestHub;
let fleetRepo: TestGitRepo;
let appRepo: TestGitRepo;
let sim: SimClusterHandle;
let k8s: KubernetesObjectApi;
let agent: Agent | undefined;
let stateDir: string;
let offset = 0;
const agentNow = () => Date.now() + offset;

async function call<T>(method: string, path: string, body?: unknown): Promise<{ status: number; body: T }> {
  const res = await fetch(`${hub.url}${path}`, {
    method,
    headers: { 'content-type': 'application/json', 'x-flotilla-actor': 'alice' },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
  return { status: res.status, body: (await res.json()) as T };
}

async function greeting(): Promise<string | undefined> {
  try {
    const cm = (await k8s.read({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'web', namespace: 'web' },
    })) as { data?: Record<string, string> };
    return cm.data?.['greeting'];
  } catch {
    return undefined;
  }
}

type Runs = { items: { trigger: string; outcome: string; message: string }[] };
const heldHeals = async () =>
  (await call<Runs>('GET', '/api/v1/sync-runs?target=web-east')).body.items.filter(
    (r) => r.trigger === 'self-heal' && r.outcome === 'Blocked',
  );

describe('a break-glass closed inside a deny window (hub, agent, kube-sim)', () => {
  beforeAll(async () => {
    appRepo = createTestGitRepo({
      'app/namespace.yaml': 'apiVersion: v1\nkind: Namespace\nmetadata:\n  name: web\n',
      'app/config.yaml': configMap('one'),
    });
    fleetRepo = createTestGitRepo({ 'fleet/web.yaml': appSet(appRepo.url) });
    hub = await startTestHub({ FLEET_REPOSITORIES: `${fleetRepo.url}#main:fleet` });
    sim = await startSimCluster({ name: 'east' });
    const kc = new KubeConfig();
    kc.loadFromString(sim.kubeconfig());
    k8s = KubernetesObjectApi.makeApiClient(kc);
    const cluster = await call<{ bootstrapToken: string }>('POST', '/api/v1/clusters', { name: 'east' });
    expect((await call('POST', '/api/v1/windows', freeze)).status).toBe(201);
    stateDir = mkdtempSync(join(tmpdir(), 'flotilla-e2e-bg-agent-'));
    offset = AGENT_START - Date.now();
    agent = await startAgent(
      loadAgentConfig({
        FLOTILLA_HUB_URL: hub.url,
        FLOTILLA_CLUSTER_NAME: 'east',
        FLOTILLA_BOOTSTRAP_TOKEN: cluster.body.bootstrapToken,
        FLOTILLA_STATE_DIR: stateDir,
      }),
      {
        kubeConfig: kc,
        longPollSeconds: 1,
        logger: pino({ level: 'silent' }),
        syncPollMs: 50,
        now: () => new Date(agentNow()),
        selfHealBackoff: { initialMs: 50, maxMs: 1_000 },
      },
    );
  }, 180_000);

  afterAll(async () => {
    await agent?.stop();
    await sim?.stop();
    await hub?.close();
    fleetRepo?.remove();
    appRepo?.remove();
    if (stateDir) rmSync(stateDir, { recursive: true, force: true });
  }, 120_000);

  it('heals the manual change when the window opens, and history names the window meanwhile', async () => {
    await expect.poll(greeting, { timeout: 25_000, interval: 250 }).toBe('one');

    const opened = await call<{ id: number }>('POST', '/api/v1/break-glass', {
      scope: 'target',
      name: 'web-east',
      reason: 'INC-7: hand edit',
      durationMinutes: 30,
      pauseSelfHeal: true,
    });
    expect(opened.status).toBe(201);
    // The agent holds the override once the hub records the manual change made under it.
    await expect
      .poll(
        async () => {
          await k8s.patch(
            {
              apiVersion: 'v1',
              kind: 'ConfigMap',
              metadata: { name: 'web', namespace: 'web' },
              data: { greeting: 'by-hand' },
            },
            undefined,
            undefined,
            'kubectl-edit',
            undefined,
            PatchStrategy.MergePatch,
          );
          const record = await call<{ changes: unknown[] }>(
            'GET',
            `/api/v1/break-glass/${opened.body.id}/record`,
          );
          return record.body.changes.length;
        },
        { timeout: 20_000, interval: 500 },
      )
      .toBeGreaterThan(0);
    expect(await greeting()).toBe('by-hand');

    // Inside the freeze, the break-glass is closed.
    await expect.poll(() => agentNow() >= Date.parse('2026-06-01T10:00:01Z'), { timeout: 60_000 }).toBe(true);
    expect(agentNow()).toBeLessThan(Date.parse('2026-06-01T10:00:15Z'));
    const closed = await call('POST', `/api/v1/break-glass/${opened.body.id}/close`, {
      reason: 'incident over',
    });
    expect(closed.status).toBe(200);

    // Held: history says by which window, and the change stays until it opens.
    await expect.poll(async () => (await heldHeals()).length, { timeout: 15_000, interval: 250 }).toBe(1);
    expect((await heldHeals())[0]?.message).toBe(
      'blocked by window eu-night-freeze until 2026-06-01T10:00:20.000Z',
    );
    if (agentNow() < Date.parse('2026-06-01T10:00:19Z')) expect(await greeting()).toBe('by-hand');

    // Healed once the window opens.
    await expect.poll(greeting, { timeout: 30_000, interval: 250 }).toBe('one');
    expect(agentNow()).toBeGreaterThanOrEqual(Date.parse('2026-06-01T10:00:20Z'));
    type Audit = { items: { action: string }[] };
    const audit = await call<Audit>('GET', '/api/v1/audit?scope=target:web-east');
    expect(audit.body.items.map((e) => e.action)).toEqual(expect.arrayContaining(['break-glass.closed']));
  }, 240_000);
});
