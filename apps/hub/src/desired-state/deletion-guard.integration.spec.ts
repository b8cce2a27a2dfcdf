import 'reflect-metadata';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import {
  createTestGitRepo,
  startTestHub,
  waitForIdleQueues,
  type TestGitRepo,
  type TestHub,
} from '../testing/index.js';

// The deletion guard on the real hub (PostgreSQL, Redis, Git): a shrinking expansion waits, changes
// nothing, is shown and audited; a person confirms it with a reason; the preview writes nothing.

const fixture = (name: string) => readFileSync(new URL(`./testdata/${name}`, import.meta.url), 'utf8');

let hub: TestHub;
let repo: TestGitRepo;

interface Answer<T> {
  status: number;
  body: T;
}

async function call<T = Record<string, unknown>>(
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<Answer<T>> {
  const res = await fetch(`${hub.url}${path}`, {
    method,
    headers: { ...headers, ...(body !== undefined && { 'content-type': 'application/json' }) },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : null) as T };
}

interface PendingView {
  inputsHash: string;
  currentCount: number;
  targetCount: number;
  delete: string[];
  create: string[];
  update: string[];
  deletePercent: number;
  limit: number;
  baseline?: number;
}

interface AppSetView {
  status: string;
  error: { code: string; message: string; path?: string } | null;
  pendingExpansion: PendingView | null;
  targetCount: number;
  document: unknown;
}

interface TargetView {
  id: string;
  name: string;
  cluster: string;
  namespace: string;
  desiredRevision: string;
  bundleDigest: string;
}

interface AuditItem {
  actor: string;
  action: string;
  details: Record<string, unknown>;
}

function listDoc(elements: { cluster: string; ns: string }[], name = 'guarded'): Record<string, unknown> {
  const doc = parse(fixture('appset-guarded-list.yaml').replaceAll('REPO_URL', repo.url)) as {
    metadata: { name: string };
    spec: { generators: { list: { elements: unknown[] } }[]; template: { metadata: { name: string } } };
  };
  doc.metadata.name = name;
  doc.spec.template.metadata.name = `${name}-{{cluster}}`;
  const first = doc.spec.generators[0];
  if (first) first.list.elements = elements;
  return doc;
}

const el = (...clusters: string[]) => clusters.map((cluster) => ({ cluster, ns: 'web' }));

async function appSet(name: string): Promise<AppSetView> {
  const r = await call<AppSetView>('GET', `/api/v1/appsets/${name}`);
  expect(r.status).toBe(200);
  return r.body;
}

async function targets(appSetName: string): Promise<TargetView[]> {
  return (await call<TargetView[]>('GET', `/api/v1/targets?appSet=${appSetName}`)).body;
}

async function audit(appSetName: string, action: string): Promise<AuditItem[]> {
  const r = await call<{ items: AuditItem[] }>(
    'GET',
    `/api/v1/audit?scope=appset:${appSetName}&action=${action}&limit=100`,
  );
  return r.body.items;
}

/**
 * Submits a document and waits until the appset shows `status` with `targetCount` targets (an
 * expansion of the previous document may still finish first, so "not Pending" is not enough).
 */
async function applyAndSettle(
  doc: unknown,
  name: string,
  status: string,
  targetCount: number,
): Promise<AppSetView> {
  const r = await call('POST', '/api/v1/appsets', doc);
  expect([200, 201]).toContain(r.status);
  await expect
    .poll(
      async () => {
        const a = await appSet(name);
        return `${a.status} ${a.targetCount}`;
      },
      { timeout: 60_000 },
    )
    .toBe(`${status} ${targetCount}`);
  // The appset shows Ready when the expansion commits; the job goes on to release the targets
  // (rollouts set releasedRevision), so a snapshot taken now could change under the test.
  await waitForIdleQueues(hub.app);
  return appSet(name);
}

async function refreshRepository(): Promise<void> {
  const repos = await call<{ id: string; url: string }[]>('GET', '/api/v1/repositories');
  const mine = repos.body.find((r) => r.url === repo.url);
  expect(mine).toBeDefined();
  expect((await call('POST', `/api/v1/repositories/${mine?.id}/refresh`)).status).toBe(202);
}

describe('deletion guard', () => {
  beforeAll(async () => {
    repo = createTestGitRepo({
      'app/config.yaml': fixture('configmap.yaml'),
      'clusters/c1/config.yaml': fixture('configmap.yaml'),
      'clusters/c2/config.yaml': fixture('configmap.yaml'),
      'clusters/c3/config.yaml': fixture('configmap.yaml'),
      'clusters/c4/config.yaml': fixture('configmap.yaml'),
      'README.md': '# fleet\n',
    });
    // Polls every 3 s, not every second: on a busy machine a fetch takes longer than a second, the
    // polls queue up, and the queues are never seen idle. The tests refresh by hand when Git moves.
    hub = await startTestHub({ SOURCE_POLL_INTERVAL_SECONDS: '3' });
    for (const name of ['c1', 'c2', 'c3', 'c4'])
      expect((await call('POST', '/api/v1/clusters', { name })).status).toBe(201);
  }, 180_000);

  afterAll(async () => {
    await hub?.close();
    repo?.remove();
  }, 120_000);

  it('holds an expansion that would delete 3 of 4 targets: nothing changes, status Held, audited', async () => {
    const ready = await applyAndSettle(listDoc(el('c1', 'c2', 'c3', 'c4')), 'guarded', 'Ready', 4);
    expect(ready).toMatchObject({ status: 'Ready', targetCount: 4, pendingExpansion: null });
    const before = await targets('guarded');
    expect(before.map((t) => t.name)).toEqual(['guarded-c1', 'guarded-c2', 'guarded-c3', 'guarded-c4']);

    const held = await applyAndSettle(listDoc(el('c1')), 'guarded', 'Held', 4);
    expect(held.status).toBe('Held');
    expect(held.targetCount).toBe(4);
    expect(held.error?.code).toBe('deletion-held');
    expect(held.error?.message).toContain('would delete 3 of 4 targets (75 % > the 50 % limit)');
    expect(held.error?.message).toContain('guarded-c2, guarded-c3, guarded-c4');
    expect(held.pendingExpansion).toMatchObject({
      currentCount: 4,
      targetCount: 1,
      delete: ['guarded-c2', 'guarded-c3', 'guarded-c4'],
      create: [],
      update: [],
      deletePercent: 75,
      limit: 50,
    });
    expect(held.pendingExpansion?.inputsHash).toMatch(/^[0-9a-f]{24}$/);
    expect(await targets('guarded')).toEqual(before);

    const events = await audit('guarded', 'appset.expansion-held');
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({
      actor: 'system:expansion',
      details: { delete: ['guarded-c2', 'guarded-c3', 'guarded-c4'], deletePercent: 75, limit: 50 },
    });
  }, 120_000);

  it('applies the held expansion once a person confirms it with a reason', async () => {
    const held = await appSet('guarded');
    const hash = held.pendingExpansion?.inputsHash ?? '';

    const noReason = await call<{ code: string; path: string }>(
      'POST',
      '/api/v1/appsets/guarded/confirm-expansion',
      { inputsHash: hash },
    );
    expect(noReason.status).toBe(400);
    expect(noReason.body).toMatchObject({ code: 'invalid-request', path: 'reason' });

    const wrong = await call<{ code: string }>('POST', '/api/v1/appsets/guarded/confirm-expansion', {
      inputsHash: '0'.repeat(24),
      reason: 'decommissioning',
    });
    expect(wrong.status).toBe(409);
    expect(wrong.body.code).toBe('hold-changed');
    expect((await targets('guarded')).length).toBe(4);

    const ok = await call<{ status: string; deleted: number }>(
      'POST',
      '/api/v1/appsets/guarded/confirm-expansion',
      { inputsHash: hash, reason: 'c2-c4 are being decommissioned' },
      { 'x-flotilla-actor': 'alice' },
    );
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ status: 'Ready', created: 0, updated: 0, deleted: 3 });
    expect((await targets('guarded')).map((t) => t.name)).toEqual(['guarded-c1']);
    expect(await appSet('guarded')).toMatchObject({ status: 'Ready', error: null, pendingExpansion: null });

    const confirmed = await audit('guarded', 'appset.expansion-confirmed');
    expect(confirmed).toHaveLength(1);
    expect(confirmed[0]).toMatchObject({
      // An open hub proves nobody, so X-Flotilla-Actor names nobody: the actor is the open hub's.
      actor: 'user:admin',
      details: {
        inputsHash: hash,
        reason: 'c2-c4 are being decommissioned',
        deleted: ['guarded-c2', 'guarded-c3', 'guarded-c4'],
      },
    });

    const again = await call<{ code: string }>('POST', '/api/v1/appsets/guarded/confirm-expansion', {
      inputsHash: hash,
      reason: 'twice',
    });
    expect(again.status).toBe(409);
    expect(again.body.code).toBe('nothing-held');
  }, 120_000);

  it('applies a shrink within the limit (1 of 4 = 25 % <= 50 %) at once', async () => {
    expect(
      (await applyAndSettle(listDoc(el('c1', 'c2', 'c3', 'c4')), 'guarded', 'Ready', 4)).targetCount,
    ).toBe(4);
    const shrunk = await applyAndSettle(listDoc(el('c1', 'c2', 'c3')), 'guarded', 'Ready', 3);
    expect(shrunk).toMatchObject({ status: 'Ready', targetCount: 3, pendingExpansion: null });
    expect((await targets('guarded')).map((t) => t.name)).toEqual(['guarded-c1', 'guarded-c2', 'guarded-c3']);
  }, 120_000);

  it('previews create, update and delete without changing anything', async () => {
    const beforeTargets = await targets('guarded');
    const beforeAppSet = await appSet('guarded');
    const beforeAudit = (await call<{ items: unknown[] }>('GET', '/api/v1/audit?limit=500')).body.items;

    const stored = await call<Record<string, unknown>>('GET', '/api/v1/appsets/guarded/preview');
    expect(stored.status).toBe(200);
    expect(stored.body).toMatchObject({
      create: [],
      update: [],
      delete: [],
      guard: { wouldHold: false, deletePercent: 0, limit: 50, baseline: 4 },
    });

    const doc = listDoc([
      { cluster: 'c2', ns: 'other' },
      { cluster: 'c3', ns: 'web' },
      { cluster: 'c4', ns: 'web' },
    ]);
    const r = await call<{
      inputsHash: string;
      targets: { name: string; cluster: string; namespace: string; desiredRevision: string }[];
      create: string[];
      update: string[];
      delete: string[];
      guard: unknown;
    }>('POST', '/api/v1/appsets/preview', doc);
    expect(r.status).toBe(200);
    expect(r.body.targets.map((t) => [t.name, t.cluster, t.namespace])).toEqual([
      ['guarded-c2', 'c2', 'other'],
      ['guarded-c3', 'c3', 'web'],
      ['guarded-c4', 'c4', 'web'],
    ]);
    expect(r.body.targets[0]?.desiredRevision).toBe(repo.head());
    expect(r.body.create).toEqual(['guarded-c4']);
    expect(r.body.update).toEqual(['guarded-c2']);
    expect(r.body.delete).toEqual(['guarded-c1']);
    expect(r.body.guard).toEqual({ wouldHold: false, deletePercent: 33.3, limit: 50, baseline: 4 });

    const empty = await call<{ delete: string[]; guard: unknown }>(
      'POST',
      '/api/v1/appsets/preview',
      listDoc([]),
    );
    expect(empty.body.delete).toEqual(['guarded-c1', 'guarded-c2', 'guarded-c3']);
    expect(empty.body.guard).toEqual({ wouldHold: true, deletePercent: 100, limit: 50, baseline: 4 });

    expect(await targets('guarded')).toEqual(beforeTargets);
    expect(await appSet('guarded')).toEqual(beforeAppSet);
    const afterAudit = (await call<{ items: unknown[] }>('GET', '/api/v1/audit?limit=500')).body.items;
    expect(afterAudit).toEqual(beforeAudit);

    const bad = await call<{ code: string; path: string }>('POST', '/api/v1/appsets/preview', {
      ...listDoc(el('c1')),
      spec: { ...(listDoc(el('c1'))['spec'] as object), deletionGuard: { maxDeletePercent: 150 } },
    });
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ code: 'invalid-appset', path: 'spec.deletionGuard.maxDeletePercent' });
  }, 120_000);

  it('holds a Git host answering an empty directory set even with a 100 % limit; recovery releases it', async () => {
    const doc = parse(fixture('appset-guarded-dirs.yaml').replaceAll('REPO_URL', repo.url)) as unknown;
    const ready = await applyAndSettle(doc, 'dirs', 'Ready', 4);
    expect(ready).toMatchObject({ status: 'Ready', targetCount: 4 });
    const before = await targets('dirs');

    repo.commit({
      'clusters/c1/config.yaml': null,
      'clusters/c2/config.yaml': null,
      'clusters/c3/config.yaml': null,
      'clusters/c4/config.yaml': null,
    });
    await refreshRepository();
    await expect.poll(async () => (await appSet('dirs')).status, { timeout: 60_000 }).toBe('Held');
    const held = await appSet('dirs');
    expect(held.pendingExpansion).toMatchObject({
      currentCount: 4,
      targetCount: 0,
      delete: ['dirs-c1', 'dirs-c2', 'dirs-c3', 'dirs-c4'],
      deletePercent: 100,
      limit: 100,
    });
    expect(held.error?.message).toContain('would delete 4 of 4 targets (all of them)');
    expect(await targets('dirs')).toEqual(before);

    // The host recovers: the same directories again, one fewer (25 % <= 100 %) — the hold goes by itself.
    repo.commit({
      'clusters/c1/config.yaml': fixture('configmap.yaml'),
      'clusters/c2/config.yaml': fixture('configmap.yaml'),
      'clusters/c3/config.yaml': fixture('configmap.yaml'),
    });
    await refreshRepository();
    await expect.poll(async () => (await appSet('dirs')).status, { timeout: 60_000 }).toBe('Ready');
    expect(await appSet('dirs')).toMatchObject({ pendingExpansion: null, error: null, targetCount: 3 });
    expect((await targets('dirs')).map((t) => t.name)).toEqual(['dirs-c1', 'dirs-c2', 'dirs-c3']);
    const released = await audit('dirs', 'appset.hold-released');
    expect(released).toHaveLength(1);
    expect(released[0]?.details['heldInputsHash']).toBe(held.pendingExpansion?.inputsHash);
    const expanded = await audit('dirs', 'appset.expanded');
    expect(expanded[0]?.details).toMatchObject({ deleted: 1, preserveResourcesOnDeletion: true });
  }, 150_000);

  it('holds a fleet walked down step by step: the second halving is judged against the baseline', async () => {
    await applyAndSettle(listDoc(el('c1', 'c2', 'c3', 'c4'), 'walk'), 'walk', 'Ready', 4);
    // 4 → 2 deletes half of what there is (50 % <= 50 %): through.
    await applyAndSettle(listDoc(el('c1', 'c2'), 'walk'), 'walk', 'Ready', 2);
    // 2 → 1 is again half of what there is, but 3 of the 4 the appset had: held.
    const held = await applyAndSettle(listDoc(el('c1'), 'walk'), 'walk', 'Held', 2);
    expect(held.pendingExpansion).toMatchObject({
      currentCount: 2,
      targetCount: 1,
      delete: ['walk-c2'],
      deletePercent: 75,
      limit: 50,
      baseline: 4,
    });
    expect(held.error?.message).toContain('75 % of the baseline of 4 targets > the 50 % limit');
    expect((await targets('walk')).map((t) => t.name)).toEqual(['walk-c1', 'walk-c2']);

    // A person confirms: the baseline is now what they confirmed, and a later halving is judged on it.
    const ok = await call('POST', '/api/v1/appsets/walk/confirm-expansion', {
      inputsHash: held.pendingExpansion?.inputsHash,
      reason: 'c2 is being retired',
    });
    expect(ok.status).toBe(200);
    await applyAndSettle(listDoc(el('c1', 'c3'), 'walk'), 'walk', 'Ready', 2);
    await applyAndSettle(listDoc(el('c1'), 'walk'), 'walk', 'Ready', 1);
  }, 150_000);
});
