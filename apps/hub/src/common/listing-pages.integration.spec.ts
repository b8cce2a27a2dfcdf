import 'reflect-metadata';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from '@flotilla/contract';
import { Database } from '../db/database.js';
import { hubCaller, startTestHub, type TestHub } from '../testing/index.js';

// Every paged inventory listing, the same way: pages of `limit` in name order that never skip or
// repeat, the last with nextCursor null, a bad limit or cursor refused with its field, and the plain
// array without either (older clients).

let hub: TestHub;
const call = hubCaller(() => hub);

// `key`: the field a listing is paged by (`name` unless said); `names`: its keys in listing order
// (filled in by beforeAll where the hub makes them: ids).
const LISTINGS: { path: string; key?: string; names: string[] }[] = [
  { path: '/api/v1/clusters', names: ['c-a', 'c-b', 'c-c', 'c-d', 'c-e'] },
  { path: '/api/v1/appsets', names: ['app-1', 'app-2', 'app-3'] },
  { path: '/api/v1/targets', names: ['t-1', 't-2', 't-3', 't-4'] },
  { path: '/api/v1/projects', names: ['team-a', 'team-b', 'team-c'] },
  { path: '/api/v1/windows', names: ['freeze-1', 'freeze-2', 'freeze-3'] },
  { path: '/api/v1/tokens', names: ['ci-1', 'ci-2', 'ci-3'] },
  {
    path: '/api/v1/repositories',
    key: 'url',
    names: [
      'https://git.example.com/a.git',
      'https://git.example.com/b.git',
      'https://git.example.com/c.git',
    ],
  },
  { path: '/api/v1/notifications/destinations', names: ['hook-1', 'hook-2', 'hook-3'] },
  // A policy is shown as its document.
  { path: '/api/v1/notifications/policies', key: 'metadata.name', names: ['tell-1', 'tell-2', 'tell-3'] },
  { path: '/api/v1/pins', key: 'target', names: ['t-1', 't-2', 't-3'] },
  // Newest first.
  { path: '/api/v1/break-glass', key: 'id', names: [] },
  { path: '/api/v1/fleet-sources', key: 'id', names: [] },
];
const listing = (path: string) => LISTINGS.find((l) => l.path === path)!;
const keyOf = (key: string | undefined) => (item: Record<string, unknown>) =>
  String((key ?? 'name').split('.').reduce<unknown>((v, k) => (v as Record<string, unknown>)[k], item));

describe('paged listings (real hub, PostgreSQL)', () => {
  beforeAll(async () => {
    // A secrets key: notification destinations hold secrets.
    hub = await startTestHub({ FLOTILLA_SECRETS_KEY: 'ef'.repeat(32) });
    for (const name of LISTINGS[0]!.names)
      expect((await call('POST', '/api/v1/clusters', { name })).status).toBe(201);
    for (const name of LISTINGS[3]!.names) {
      const project = await call('POST', '/api/v1/projects', {
        apiVersion: 'flotilla.dev/v1alpha1',
        kind: 'Project',
        metadata: { name },
        spec: {
          sourceRepos: ['https://git.example.com/apps.git'],
          destinations: [{ cluster: 'c-a', namespace: name }],
        },
      });
      expect(project.status).toBe(201);
    }
    for (const name of LISTINGS[4]!.names) {
      const window = await call('POST', '/api/v1/windows', {
        name,
        kind: 'deny',
        schedule: '0 22 * * *',
        duration: '1h',
        clusters: ['c-*'],
        reason: 'nightly freeze',
      });
      expect(window.status).toBe(201);
    }
    for (const name of LISTINGS[5]!.names) {
      expect((await call('POST', '/api/v1/tokens', { name, role: 'viewer' })).status).toBe(201);
    }
    const db = hub.app.get(Database);
    const cluster = await db.prisma.cluster.findUniqueOrThrow({ where: { name: 'c-a' } });
    for (const name of LISTINGS[1]!.names) {
      const appSet = await db.prisma.applicationSet.create({
        data: { name, apiVersion: 'flotilla.dev/v1alpha1', spec: {} },
      });
      if (name !== 'app-1') continue;
      for (const target of LISTINGS[2]!.names) {
        await db.prisma.target.create({
          data: {
            name: target,
            appSetId: appSet.id,
            clusterId: cluster.id,
            namespace: 'web',
            repoUrl: 'file:///repo',
            sourcePath: 'apps/web',
            targetRevision: 'main',
            desiredRevision: 'c1',
            syncPolicy: {},
          },
        });
      }
    }
    for (const url of listing('/api/v1/repositories').names)
      await db.prisma.repository.create({ data: { url } });
    for (const name of listing('/api/v1/notifications/destinations').names) {
      const destination = await call('POST', '/api/v1/notifications/destinations', {
        name,
        type: 'webhook',
        url: 'https://hooks.example.com/flotilla',
        secret: 'a-secret-of-sixteen-or-more',
      });
      expect(destination.status, JSON.stringify(destination.body)).toBe(201);
    }
    for (const name of listing('/api/v1/notifications/policies').names) {
      const policy = await call('POST', '/api/v1/notifications/policies', {
        apiVersion: 'flotilla.dev/v1alpha1',
        kind: 'NotificationPolicy',
        metadata: { name },
        spec: { triggers: ['break-glass-opened'], destinations: ['hook-1'] },
      });
      expect(policy.status, JSON.stringify(policy.body)).toBe(201);
    }
    for (const name of listing('/api/v1/pins').names) {
      const target = await db.prisma.target.findUniqueOrThrow({ where: { name } });
      await db.prisma.targetPin.create({
        data: {
          targetId: target.id,
          revision: 'c1',
          bundleDigest: 'sha256:0',
          reason: 'hold',
          actor: 'test',
        },
      });
    }
    const breakGlass = listing('/api/v1/break-glass').names;
    for (const name of ['c-a', 'c-b', 'c-c']) {
      const opened = await call<{ id: number }>('POST', '/api/v1/break-glass', {
        scope: 'cluster',
        name,
        reason: 'incident',
        durationMinutes: 30,
        pauseSelfHeal: true,
      });
      expect(opened.status, JSON.stringify(opened.body)).toBe(201);
      breakGlass.unshift(String(opened.body.id));
    }
    const sources = listing('/api/v1/fleet-sources').names;
    for (const path of ['fleet/a', 'fleet/b', 'fleet/c']) {
      const row = await db.prisma.fleetSource.create({
        data: { repoUrl: 'https://git.example.com/fleet.git', path },
      });
      sources.push(row.id);
    }
    sources.sort();
  }, 180_000);

  afterAll(async () => {
    await hub?.close();
  }, 60_000);

  describe.each(LISTINGS)('$path', ({ path, key, names }) => {
    it('pages by its key with a cursor, never skipping or repeating, to a last page with no cursor', async () => {
      const seen: string[] = [];
      let cursor: string | null = null;
      let pages = 0;
      do {
        const page: { status: number; body: Page<Record<string, unknown>> } = await call<
          Page<Record<string, unknown>>
        >('GET', `${path}?limit=2${cursor ? `&cursor=${cursor}` : ''}`);
        expect(page.status).toBe(200);
        expect(page.body.items.length).toBeLessThanOrEqual(2);
        seen.push(...page.body.items.map(keyOf(key)));
        cursor = page.body.nextCursor;
        pages++;
      } while (cursor !== null);
      expect(seen).toEqual(names);
      expect(pages).toBe(Math.ceil(names.length / 2));
      // A cursor alone pages with the default limit.
      const rest = await call<Page<Record<string, unknown>>>(
        'GET',
        `${path}?cursor=${Buffer.from(names[0]!).toString('base64url')}`,
      );
      expect(rest.body.items.map(keyOf(key))).toEqual(names.slice(1));
      expect(rest.body.nextCursor).toBeNull();
    });

    it('refuses a bad limit or cursor with its field, and answers the plain array without either', async () => {
      for (const [query, field] of [
        ['limit=0', 'limit'],
        ['limit=501', 'limit'],
        ['limit=two', 'limit'],
        ['cursor=not%20a%20cursor', 'cursor'],
      ]) {
        const refused = await call<{ code: string; path: string }>('GET', `${path}?${query}`);
        expect([query, refused.status, refused.body.path]).toEqual([query, 400, field]);
      }
      const plain = await call<Record<string, unknown>[]>('GET', path);
      expect(plain.body.map(keyOf(key)).sort()).toEqual([...names].sort());
    });
  });

  it('pages the targets of a filter (appSet, cluster) the same way', async () => {
    const first = await call<Page<{ name: string }>>(
      'GET',
      '/api/v1/targets?appSet=app-1&cluster=c-a&limit=3',
    );
    expect(first.body.items.map((t) => t.name)).toEqual(['t-1', 't-2', 't-3']);
    const second = await call<Page<{ name: string }>>(
      'GET',
      `/api/v1/targets?appSet=app-1&cluster=c-a&limit=3&cursor=${first.body.nextCursor}`,
    );
    expect(second.body).toEqual({ items: [expect.objectContaining({ name: 't-4' })], nextCursor: null });
    const none = await call<Page<unknown>>('GET', '/api/v1/targets?appSet=app-2&limit=3');
    expect(none.body).toEqual({ items: [], nextCursor: null });
  });
});
