import { mkdtemp, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type AssignmentsResponse, type Bundle } from '@flotilla/contract';
import { bundleDigest } from '@flotilla/manifests';
import { StateStore } from './state-store.js';

const manifests = [{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' }, data: { a: '1' } }];
const bundle: Bundle = {
  digest: bundleDigest(manifests),
  source: { repoUrl: 'https://git.example.com/apps.git', revision: 'abc', path: 'web' },
  manifests,
};

describe('StateStore', () => {
  let dir: string;
  let store: StateStore;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'agent-state-'));
    store = new StateStore(join(dir, 'state'));
    await store.init();
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('keeps the credential readable by the owner only', async () => {
    const cred = { clusterName: 'east', clusterId: 'c1', credential: 's3cret', expiresAt: null };
    await store.saveCredential(cred);
    expect((await stat(join(dir, 'state', 'credential.json'))).mode & 0o777).toBe(0o600);
    expect(await new StateStore(join(dir, 'state')).loadCredential()).toEqual(cred);
    await store.clearCredential();
    expect(await store.loadCredential()).toBeUndefined();
  });

  it('round-trips assignments and leaves no temporary files behind', async () => {
    const response: AssignmentsResponse = {
      clusterName: 'east',
      etag: '"7"',
      assignments: [],
      healthRules: [],
    };
    await store.saveAssignments(response);
    await store.saveAssignments({ ...response, etag: '"8"' });
    expect((await store.loadAssignments())?.etag).toBe('"8"');
    expect((await readdir(join(dir, 'state'))).filter((n) => n.endsWith('.tmp'))).toEqual([]);
  });

  it('serves a bundle by digest only while its content matches the digest', async () => {
    await store.saveBundle(bundle);
    expect(await store.loadBundle(bundle.digest)).toEqual(bundle);
    expect(await store.listBundleDigests()).toEqual([bundle.digest]);

    const path = join(dir, 'state', 'bundles', `${bundle.digest.replace(':', '-')}.json`);
    const tampered = JSON.parse(await readFile(path, 'utf8')) as Bundle;
    (tampered.manifests[0] as unknown as { data: Record<string, string> }).data['a'] = '2';
    await writeFile(path, JSON.stringify(tampered));
    expect(await store.loadBundle(bundle.digest)).toBeUndefined();
    expect(store.corrupt.map((c) => [c.code, c.path])).toEqual([['agent-state-corrupt', path]]);
  });

  it('treats an unreadable file as absent and says which file', async () => {
    const path = join(dir, 'state', 'assignments.json');
    await writeFile(path, '{ not json');
    expect(await store.loadAssignments()).toBeUndefined();
    expect(store.corrupt[0]?.path).toBe(path);
    expect(store.corrupt[0]?.message).toContain(path);
  });

  it('gives a fresh target state when none is stored, and keeps what was saved', async () => {
    expect(await store.loadTargetState('t/1')).toEqual({
      inventory: [],
      lastSync: null,
      pendingIntent: null,
      contested: {},
      startedOperations: [],
    });
    const state = {
      inventory: [{ apiVersion: 'v1', kind: 'ConfigMap', namespace: 'ns', name: 'c' }],
      lastSync: {
        digest: bundle.digest,
        revision: 'abc',
        outcome: 'Succeeded',
        at: '2026-12-02T10:00:00.000Z',
        attempts: 0,
      },
      pendingIntent: 'self-heal' as const,
      contested: { '/ConfigMap/ns/c': 'kubectl-edit' },
      startedOperations: ['op-1'],
    };
    await store.saveTargetState('t/1', state);
    expect(await new StateStore(join(dir, 'state')).loadTargetState('t/1')).toEqual(state);
  });
});
