import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type KubeObject, type ReportBatch } from '@flotilla/contract';
import { AgentHarness, pollOptions as poll } from './testing/agent-harness.js';

const cm = (name: string, annotations: Record<string, string>): KubeObject => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, annotations },
  data: { k: 'v' },
});

/** Never becomes ready in kube-sim: wave 0 waits on it. */
const stuck: KubeObject = {
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: 'stuck' },
  spec: {
    replicas: 1,
    selector: { matchLabels: { app: 'stuck' } },
    template: {
      metadata: { labels: { app: 'stuck' } },
      spec: { containers: [{ name: 'main', image: 'nginx:1.27-unready' }] },
    },
  },
};

describe('agent: stopping during a wave wait is not failing (#14 defect 5)', () => {
  let h: AgentHarness;
  beforeAll(async () => {
    h = await AgentHarness.start('stopping');
  });
  afterAll(async () => {
    await h.stop();
  });

  it('runs no SyncFail hook, reports no failure, and runs the sync again after a restart', async () => {
    const stateDir = join(h.dir, 'state');
    const digest = h.hub.addBundle([
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'shop' } },
      stuck,
      cm('later', { 'argocd.argoproj.io/sync-wave': '1' }),
      cm('on-fail', { 'argocd.argoproj.io/hook': 'SyncFail' }),
    ]);
    h.hub.setAssignments([h.assignment({ bundleDigest: digest })]);
    const first = await h.runAgent({ stateDir, syncPollMs: 50 });
    await expect.poll(() => h.read('Deployment', 'stuck'), poll).toBeDefined();

    // As SIGTERM does (main.ts calls stop()): mid-wait for wave 0's health.
    await first.stop();
    expect(await h.read('ConfigMap', 'on-fail')).toBeUndefined();
    expect(await h.read('ConfigMap', 'later')).toBeUndefined();

    // The restarted agent starts the revision again: it applies wave 0 anew.
    await h.remove('Deployment', 'stuck');
    await expect.poll(() => h.read('Deployment', 'stuck'), poll).toBeUndefined();
    await h.runAgent({ stateDir, syncPollMs: 50 });
    await expect.poll(() => h.read('Deployment', 'stuck'), poll).toBeDefined();
    expect(await h.read('ConfigMap', 'on-fail')).toBeUndefined();
    // Nothing the agents said, delivered or still queued, is a failed sync.
    const queued = await Promise.all(
      (await readdir(join(stateDir, 'reports')))
        .filter((f) => f.endsWith('.json'))
        .map(
          async (f) =>
            (JSON.parse(await readFile(join(stateDir, 'reports', f), 'utf8')) as ReportBatch).reports,
        ),
    );
    const syncs = [...h.syncs(), ...queued.flat().filter((r) => r.type === 'sync')];
    expect(syncs.filter((s) => s.outcome !== 'Succeeded')).toEqual([]);
  });
});
