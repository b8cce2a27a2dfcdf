import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig, KubernetesObjectApi } from '@kubernetes/client-node';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadAgentConfig, startAgent, type Agent } from '@flotilla/agent';
import { createTestGitRepo, startTestHub, type TestGitRepo, type TestHub } from '@flotilla/hub/testing';
import { startSimCluster, type SimClusterHandle } from '@flotilla/kube-sim';

/**
 * Change control declared in Git, end to end: a hub on PostgreSQL and Redis following a fleet
 * repository, a real agent on a simulated cluster. A commit that adds a deny window blocks the next
 * workload change; reverting that commit lets it through; the audit log names both commits and
 * their authors.
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
`;
// Always in force: every minute, for an hour.
const freeze = `apiVersion: flotilla.dev/v1alpha1
kind: SyncWindow
metadata:
  name: change-freeze
spec:
  kind: deny
  schedule: '* * * * *'
  duration: 1h
  clusters: ['*']
`;
const ALICE = 'Alice Ops <alice@example.com>';
const BOB = 'Bob Ops <bob@example.com>';

let hub: TestHub;
let fleetRepo: TestGitRepo;
let appRepo: TestGitRepo;
let sim: SimClusterHandle;
let k8s: KubernetesObjectApi;
let agent: Agent | undefined;
let stateDir: string;

/** Runs git in the fleet repository as a named author. */
function gitAs(author: string, ...args: string[]): string {
  const [, name = '', email = ''] = /^(.*) <(.*)>$/.exec(author) ?? [];
  return execFileSync(
    'git',
    ['-C', fleetRepo.dir, '-c', `user.name=${name}`, '-c', `user.email=${email}`, ...args],
    {
      encoding: 'utf8',
    },
  ).trim();
}

async function call<T>(path: string): Promise<T> {
  const res = await fetch(`${hub.url}${path}`);
  return (await res.json()) as T;
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

async function appliedCommit(): Promise<string | null> {
  const [source] = await call<{ appliedCommit: string | null }[]>('/api/v1/fleet-sources');
  return source?.appliedCommit ?? null;
}

describe('a deny window committed to the fleet repository', () => {
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
    const cluster = await fetch(`${hub.url}/api/v1/clusters`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'east' }),
    });
    const { bootstrapToken } = (await cluster.json()) as { bootstrapToken: string };
    stateDir = mkdtempSync(join(tmpdir(), 'flotilla-e2e-fleet-agent-'));
    agent = await startAgent(
      loadAgentConfig({
        FLOTILLA_HUB_URL: hub.url,
        FLOTILLA_CLUSTER_NAME: 'east',
        FLOTILLA_BOOTSTRAP_TOKEN: bootstrapToken,
        FLOTILLA_STATE_DIR: stateDir,
      }),
      { kubeConfig: kc, longPollSeconds: 1, logger: pino({ level: 'silent' }), syncPollMs: 50 },
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

  it('blocks the next workload change; reverting the commit lifts it; the audit names both commits and authors', async () => {
    await expect.poll(greeting, { timeout: 60_000, interval: 250 }).toBe('one');

    // Alice freezes changes in Git.
    writeFileSync(join(fleetRepo.dir, 'fleet/freeze.yaml'), freeze);
    gitAs(ALICE, 'add', '-A');
    gitAs(ALICE, 'commit', '-q', '-m', 'freeze: incident 7');
    const freezeCommit = fleetRepo.head();
    await expect.poll(appliedCommit, { timeout: 60_000, interval: 250 }).toBe(freezeCommit);

    // The next workload change is blocked: the agent reports it and the cluster keeps the old value.
    const change = appRepo.commit({ 'app/config.yaml': configMap('two') }, 'greeting two');
    // Blocked: the hub says the target may not sync and why, the agent reports the sync Blocked,
    // and the cluster keeps the old value.
    type Target = { desiredRevision: string };
    await expect
      .poll(async () => (await call<Target[]>('/api/v1/targets?appSet=web'))[0]?.desiredRevision, {
        timeout: 60_000,
        interval: 250,
      })
      .toBe(change);
    const blocked = await call<{ canSync: boolean; windows: { name: string; active: boolean }[] }>(
      '/api/v1/targets/web-east/windows',
    );
    expect(blocked.canSync).toBe(false);
    expect(blocked.windows).toEqual([
      expect.objectContaining({ name: 'change-freeze', kind: 'deny', active: true }),
    ]);
    type Runs = { items: { revision: string; outcome: string }[] };
    await expect
      .poll(
        async () =>
          (await call<Runs>('/api/v1/sync-runs?target=web-east')).items.some(
            (r) => r.revision === change && r.outcome === 'Blocked',
          ),
        { timeout: 60_000, interval: 250 },
      )
      .toBe(true);
    expect(await greeting()).toBe('one');

    // Bob reverts the freeze; the change goes through.
    gitAs(BOB, 'revert', '--no-edit', freezeCommit);
    const revertCommit = fleetRepo.head();
    await expect.poll(appliedCommit, { timeout: 60_000, interval: 250 }).toBe(revertCommit);
    await expect.poll(greeting, { timeout: 60_000, interval: 250 }).toBe('two');

    type Audit = { items: { actor: string; action: string; details: Record<string, unknown> }[] };
    const created = await call<Audit>('/api/v1/audit?scope=window:change-freeze&action=window.created');
    expect(created.items[0]).toMatchObject({ actor: `git:${ALICE}` });
    expect(String(created.items[0]?.details['reason'])).toContain(freezeCommit.slice(0, 12));
    const deleted = await call<Audit>('/api/v1/audit?scope=window:change-freeze&action=window.deleted');
    expect(deleted.items[0]).toMatchObject({ actor: `git:${BOB}` });
    expect(String(deleted.items[0]?.details['reason'])).toContain(revertCommit.slice(0, 12));
    const applied = await call<Audit>('/api/v1/audit?action=fleet.applied');
    expect(applied.items.map((e) => [e.details['commit'], e.details['author']])).toEqual(
      expect.arrayContaining([
        [freezeCommit, ALICE],
        [revertCommit, BOB],
      ]),
    );
  }, 240_000);
});
