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

const LISTINGS = [
  { path: '/api/v1/clusters', names: ['c-a', 'c-b', 'c-c', 'c-d', 'c-e'] },
  { path: '/api/v1/appsets', names: ['app-1', 'app-2', 'app-3'] },
  { path: '/api/v1/targets', names: ['t-1', 't-2', 't-3', 't-4'] },
  { path: '/api/v1/projects', names: ['team-a', 'team-b', 'team-c'] },
  { path: '/api/v1/windows', names: ['freeze-1', 'freeze-2', 'freeze-3'] },
  { path: '/api/v1/tokens', names: ['ci-1', 'ci-2', 'ci-3'] },
];

describe('paged listings (real hub, PostgreSQL)', () => {
  beforeAll(async () => {
    hub = await startTestHub();
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
  }, 180_000);

  afterAll(async () => {
    await hub?.close();
  }, 60_000);

  describe.each(LISTINGS)('$path', ({ path, names }) => {
    it('pages by name with a cursor, never skipping or repeating, to a last page with no cursor', async () => {
      const seen: string[] = [];
      let cursor: string | null = null;
      let pages = 0;
      do {
        const page: { status: number; body: Page<{ name: string }> } = await call<Page<{ name: string }>>(
          'GET',
          `${path}?limit=2${cursor ? `&cursor=${cursor}` : ''}`,
        );
        expect(page.status).toBe(200);
        expect(page.body.items.length).toBeLessThanOrEqual(2);
        seen.push(...page.body.items.map((i) => i.name));
        cursor = page.body.nextCursor;
        pages++;
      } while (cursor !== null);
      expect(seen).toEqual(names);
      expect(pages).toBe(Math.ceil(names.length / 2));
      // A cursor alone pages with the default limit.
      const rest = await call<Page<{ name: string }>>(
        'GET',
        `${path}?cursor=${Buffer.from(names[0]!).toString('base64url')}`,
      );
      expect(rest.body).toEqual({
        items: names.slice(1).map((name) => expect.objectContaining({ name }) as unknown),
        nextCursor: null,
      });
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
      const plain = await call<{ name: string }[]>('GET', path);
      expect(plain.body.map((i) => i.name)).toEqual(names);
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
