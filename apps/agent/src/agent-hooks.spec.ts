import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type KubeObject, kubeObjectSchema } from '@flotilla/contract';
import { AgentHarness, loadFixture, pollOptions as poll } from './testing/agent-harness.js';

/** A PreSync Job the simulator runs to completion; HookSucceeded removes it afterwards. */
const migrate: KubeObject = {
  apiVersion: 'batch/v1',
  kind: 'Job',
  metadata: {
    name: 'migrate',
    annotations: {
      'argocd.argoproj.io/hook': 'PreSync',
      'argocd.argoproj.io/hook-delete-policy': 'HookSucceeded',
    },
  },
  spec: {
    backoffLimit: 0,
    template: { spec: { restartPolicy: 'Never', containers: [{ name: 'main', image: 'busybox:1.36' }] } },
  },
};

describe('agent: hooks end to end', () => {
  let h: AgentHarness;
  beforeAll(async () => {
    h = await AgentHarness.start('hooks');
  });
  afterAll(async () => {
    await h.stop();
  });

  it('runs a PreSync hook before the objects and reports its result to the hub', async () => {
    const digest = h.hub.addBundle([...loadFixture('bundle-web.yaml'), migrate]);
    h.hub.setAssignments([h.assignment({ bundleDigest: digest })]);
    await h.runAgent({ syncPollMs: 50 });

    await expect.poll(() => h.syncs().length, poll).toBe(1);
    const sync = h.syncs()[0];
    expect(sync?.outcome).toBe('Succeeded');
    expect(sync?.resources.map((r) => `${r.hookPhase ?? '-'} ${r.kind}/${r.name}:${r.action}`)).toEqual([
      '- Namespace/shop:applied',
      'PreSync Job/migrate:applied',
      '- ConfigMap/web-config:applied',
      '- Deployment/web:applied',
    ]);
    expect(sync?.resources[1]?.namespace).toBe('shop');
    expect(sync?.resources[1]?.message).toContain('deleted (HookSucceeded)');
    const jobs = await h.k8s.list('batch/v1', 'Job', 'shop');
    expect(jobs.items).toEqual([]);
  });

  it('creates a hook named by generateName under a fresh name and reports that name to the hub', async () => {
    // As the hub renders it: read through the contract, the name left to the server.
    const smoke = kubeObjectSchema.parse({
      ...migrate,
      metadata: { generateName: 'smoke-', annotations: { 'argocd.argoproj.io/hook': 'PostSync' } },
    });
    const digest = h.hub.addBundle([...loadFixture('bundle-web.yaml'), smoke]);
    const before = h.syncs().length;
    h.hub.setAssignments([h.assignment({ bundleDigest: digest, revision: 'r2' })]);

    await expect.poll(() => h.syncs().length, poll).toBe(before + 1);
    const sync = h.syncs()[before];
    expect(sync?.outcome).toBe('Succeeded');
    const hook = sync?.resources.find((r) => r.hookPhase === 'PostSync');
    expect(hook?.name).toMatch(/^smoke-[bcdfghjklmnpqrstvwxz2456789]{5}$/);
    const jobs = await h.k8s.list('batch/v1', 'Job', 'shop');
    expect(jobs.items.map((j) => j.metadata?.name)).toEqual([hook?.name]);
  });
});
