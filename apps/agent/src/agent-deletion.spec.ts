import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type KubeObject, type TargetDeletion } from '@flotilla/contract';
import { AgentHarness, loadFixture, pollOptions } from './testing/agent-harness.js';

const poll = { ...pollOptions, timeout: 60_000 };

describe('agent: deleting a target the hub sends a tombstone for', () => {
  let h: AgentHarness;
  beforeAll(async () => {
    h = await AgentHarness.start('deletion');
  });
  afterAll(async () => {
    await h.stop();
  });

  it('leaves an unassigned target in place, deletes only on a tombstone, once, keeping Delete=false, and reports it', async () => {
    const manifests = loadFixture('bundle-web.yaml').map((m): KubeObject =>
      m.kind === 'Namespace'
        ? {
            ...m,
            metadata: { ...m.metadata, annotations: { 'argocd.argoproj.io/sync-options': 'Delete=false' } },
          }
        : m,
    );
    const digest = h.hub.addBundle(manifests);
    h.hub.setAssignments([h.assignment({ bundleDigest: digest })]);
    await h.runAgent({ syncPollMs: 50 });
    await expect.poll(() => h.syncs().map((s) => s.outcome), poll).toEqual(['Succeeded']);

    // No longer assigned, and no tombstone: orphaned, nothing deleted.
    h.hub.setAssignments([]);
    await expect.poll(() => h.hub.acknowledged(), poll).toBe(true);
    expect(await h.read('ConfigMap', 'web-config')).toBeDefined();

    const tombstone: TargetDeletion = {
      id: 'deletion-1',
      targetId: 'target-web',
      name: 'web-east',
      namespace: 'shop',
      bundleDigest: digest,
    };
    h.hub.setAssignments([], [tombstone]);
    await expect.poll(() => h.hub.reportsOf('deletion').length, poll).toBe(1);
    const report = h.hub.reportsOf('deletion')[0];
    expect([report?.outcome, report?.deletionId, report?.targetId]).toEqual([
      'Succeeded',
      'deletion-1',
      'target-web',
    ]);
    expect(report?.resources.map((r) => `${r.kind}/${r.name}:${r.action}`).sort()).toEqual([
      'ConfigMap/web-config:deleted',
      'Deployment/web:deleted',
      'Namespace/shop:kept',
    ]);
    expect(await h.read('ConfigMap', 'web-config')).toBeUndefined();
    expect(await h.read('Deployment', 'web')).toBeUndefined();
    expect(await h.read('Namespace', 'shop', '')).toBeDefined();

    // Sent again (the hub has not taken the report in yet), it is not run again.
    h.hub.setAssignments([], [tombstone]);
    await expect.poll(() => h.hub.acknowledged(), poll).toBe(true);
    expect(h.hub.reportsOf('deletion')).toHaveLength(1);
    // Gone from the answer, its progress is forgotten.
    const progressDir = join(h.dir, 'state', 'deletions');
    expect(await readdir(progressDir)).toEqual(['deletion-1.json']);
    h.hub.setAssignments([]);
    await expect.poll(() => readdir(progressDir), poll).toEqual([]);
  });
});
