import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig, KubernetesObjectApi } from '@kubernetes/client-node';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadAgentConfig, startAgent, type Agent } from '@flotilla/agent';
import { createTestGitRepo, startTestHub, type TestGitRepo, type TestHub } from '@flotilla/hub/testing';
import { startSimCluster, type SimClusterHandle } from '@flotilla/kube-sim';

/**
 * Admission policies end to end: a hub on PostgreSQL and Redis following a fleet repository whose
 * policy forbids images from outside registry.example.com on clusters labelled env=prod, and real
 * agents on two simulated clusters (prod, staging). A commit using docker.io reaches staging only;
 * prod keeps running the previous image and its target says PolicyDenied; the fix reaches both.
 */

const poll = { timeout: 60_000, interval: 250 };

const deployment = (image: string) => `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: ${JSON.stringify(image)}}]
`;

const fleet = (appRepoUrl: string) => ({
  'fleet/clusters.yaml': `apiVersion: flotilla.dev/v1alpha1
kind: ClusterGroup
metadata: {name: production}
spec: {clusters: [prod], labels: {env: prod}}
---
apiVersion: flotilla.dev/v1alpha1
kind: ClusterGroup
metadata: {name: staging}
spec: {clusters: [staging], labels: {env: staging}}
`,
  'fleet/web.yaml': `apiVersion: flotilla.dev/v1alpha1
kind: ApplicationSet
metadata: {name: web}
spec:
  generators: [{list: {elements: [{cluster: prod}, {cluster: staging}]}}]
  template:
    metadata: {name: 'web-{{cluster}}'}
    spec:
      source: {repoURL: ${appRepoUrl}, targetRevision: main, path: app}
      destination: {name: '{{cluster}}', namespace: web}
`,
  'fleet/policies.yaml': `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: allowed-registry}
spec:
  matchConstraints:
    resourceRules: [{apiGroups: [apps], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [deployments]}]
  validations:
    - expression: "object.spec.template.spec.containers.all(c, c.image.startsWith('registry.example.com/'))"
      message: images must come from registry.example.com
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: allowed-registry
  annotations: {flotilla.dev/cluster-selector: env=prod}
spec: {policyName: allowed-registry, validationActions: [Deny]}
`,
});

let hub: TestHub;
let fleetRepo: TestGitRepo;
let appRepo: TestGitRepo;
const sims: SimClusterHandle[] = [];
const agents: Agent[] = [];
const stateDirs: string[] = [];
const clients: Record<string, KubernetesObjectApi> = {};

async function call<T>(path: string): Promise<T> {
  return (await (await fetch(`${hub.url}${path}`)).json()) as T;
}

/** The image the cluster runs now, or '-' before the Deployment exists. */
async function imageOn(cluster: string): Promise<string> {
  try {
    const d = (await clients[cluster]!.read({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'web', namespace: 'web' },
    })) as { spec?: { template?: { spec?: { containers?: { image?: string }[] } } } };
    return d.spec?.template?.spec?.containers?.[0]?.image ?? '-';
  } catch {
    return '-';
  }
}

async function reasonOf(target: string): Promise<{ code: string; message: string } | null> {
  const list = await call<{ name: string; reason: { code: string; message: string } | null }[]>(
    '/api/v1/targets?appSet=web',
  );
  return list.find((t) => t.name === target)?.reason ?? null;
}

describe('an admission policy scoped to production clusters', () => {
  beforeAll(async () => {
    appRepo = createTestGitRepo({
      'app/namespace.yaml': 'apiVersion: v1\nkind: Namespace\nmetadata:\n  name: web\n',
      'app/deploy.yaml': deployment('registry.example.com/web:1'),
    });
    fleetRepo = createTestGitRepo(fleet(appRepo.url));
    hub = await startTestHub({ FLEET_REPOSITORIES: `${fleetRepo.url}#main:fleet` });
    for (const name of ['prod', 'staging']) {
      const sim = await startSimCluster({ name });
      sims.push(sim);
      const kc = new KubeConfig();
      kc.loadFromString(sim.kubeconfig());
      clients[name] = KubernetesObjectApi.makeApiClient(kc);
      const created = await fetch(`${hub.url}/api/v1/clusters`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ name }),
      });
      const { bootstrapToken } = (await created.json()) as { bootstrapToken: string };
      const stateDir = mkdtempSync(join(tmpdir(), `flotilla-e2e-policy-${name}-`));
      stateDirs.push(stateDir);
      agents.push(
        await startAgent(
          loadAgentConfig({
            FLOTILLA_HUB_URL: hub.url,
            FLOTILLA_CLUSTER_NAME: name,
            FLOTILLA_BOOTSTRAP_TOKEN: bootstrapToken,
            FLOTILLA_STATE_DIR: stateDir,
          }),
          { kubeConfig: kc, longPollSeconds: 1, logger: pino({ level: 'silent' }), syncPollMs: 50 },
        ),
      );
    }
  }, 180_000);

  afterAll(async () => {
    for (const a of agents) await a.stop();
    for (const s of sims) await s.stop();
    await hub?.close();
    fleetRepo?.remove();
    appRepo?.remove();
    for (const d of stateDirs) rmSync(d, { recursive: true, force: true });
  }, 120_000);

  it('keeps a forbidden image off prod only, says why, and lets the fix through', async () => {
    for (const cluster of ['prod', 'staging'])
      await expect.poll(() => imageOn(cluster), poll).toBe('registry.example.com/web:1');

    const bad = appRepo.commit({ 'app/deploy.yaml': deployment('docker.io/library/nginx:1.27') }, 'nginx');
    await expect.poll(() => imageOn('staging'), poll).toBe('docker.io/library/nginx:1.27');
    await expect.poll(async () => (await reasonOf('web-prod'))?.code, poll).toBe('PolicyDenied');
    expect((await reasonOf('web-prod'))?.message).toContain(
      `policy allowed-registry (binding allowed-registry) denies Deployment web/web at ${bad.slice(0, 12)}: images must come from registry.example.com`,
    );
    // The previous revision keeps running on prod.
    expect(await imageOn('prod')).toBe('registry.example.com/web:1');
    type Audit = { items: { scope: string; details: Record<string, unknown> }[] };
    const denied = await call<Audit>('/api/v1/audit?action=policy.denied');
    expect(denied.items.map((e) => e.scope)).toEqual(['target:web-prod']);
    expect(denied.items[0]?.details).toMatchObject({ revision: bad, policy: 'allowed-registry' });

    appRepo.commit({ 'app/deploy.yaml': deployment('registry.example.com/web:2') }, 'our registry');
    for (const cluster of ['prod', 'staging'])
      await expect.poll(() => imageOn(cluster), poll).toBe('registry.example.com/web:2');
    await expect.poll(async () => (await reasonOf('web-prod'))?.code ?? null, poll).not.toBe('PolicyDenied');
  }, 240_000);
});
