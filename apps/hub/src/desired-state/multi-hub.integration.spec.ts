import 'reflect-metadata';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { NestExpressApplication } from '@nestjs/platform-express';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadHubConfig } from '../config/hub-config.js';
import { Database } from '../db/database.js';
import { GitMirrorsService } from '../sources/git/git-mirrors.service.js';
import { createHubApp } from '../hub-app.js';
import { RepositoriesService } from '../sources/repositories/repositories.service.js';
import { createTestGitRepo, type TestGitRepo } from '../testing/test-git-repo.js';
import { createTestPostgres, type TestPostgres } from '../testing/test-database.js';
import { deleteRedisPrefix, testRedisUrl, uniqueRedisPrefix } from '../testing/test-redis.js';
import { AppSetExpander } from './appset-expander.service.js';
import { AppSetsService } from './appsets.service.js';

// Two hub replicas in one process on one PostgreSQL database and one Redis prefix, each with its own
// data dir (so its own Git mirrors), as two pods of a Deployment are. They run the API role only, so
// no queue worker acts behind the test's back: each step calls one replica's services directly.

interface Replica {
  app: NestExpressApplication;
  dataDir: string;
  expander: AppSetExpander;
  repos: RepositoriesService;
  mirrors: GitMirrorsService;
}

const configMap = (value: string) =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  value: "${value}"\n`;

let postgres: TestPostgres;
let prefix: string;
let repo: TestGitRepo;
let a: Replica;
let b: Replica;
let db: Database;
let appSetId: string;
let repositoryId: string;

async function startReplica(name: string): Promise<Replica> {
  const dataDir = mkdtempSync(join(tmpdir(), `flotilla-hub-${name}-`));
  const config = loadHubConfig({
    HOST: '127.0.0.1',
    PORT: '0',
    DATABASE_URL: postgres.url,
    REDIS_URL: testRedisUrl(),
    REDIS_PREFIX: prefix,
    FLOTILLA_DATA_DIR: dataDir,
    HUB_ROLES: 'api',
    SOURCE_POLL_INTERVAL_SECONDS: '3600',
    LOG_LEVEL: 'warn',
    FLOTILLA_DEV_MODE: '1',
  });
  const app = await createHubApp(config);
  await app.init();
  return {
    app,
    dataDir,
    expander: app.get(AppSetExpander),
    repos: app.get(RepositoriesService),
    mirrors: app.get(GitMirrorsService),
  };
}

async function targetRevisions(): Promise<string[]> {
  const targets = await db.prisma.target.findMany({ where: { appSetId }, orderBy: { name: 'asc' } });
  return targets.map((t) => t.desiredRevision);
}

/** The commits `appset.expanded` events moved targets to, oldest first. */
async function expandedRevisions(): Promise<string[]> {
  const events = await db.prisma.auditEvent.findMany({
    where: { action: 'appset.expanded', scope: 'appset:shared' },
    orderBy: { id: 'asc' },
  });
  return events.map((e) => {
    const targets = (e.details as { targets: { revision: string }[] }).targets;
    return targets[0]?.revision ?? '';
  });
}

beforeAll(async () => {
  repo = createTestGitRepo({ 'app/cm.yaml': configMap('r1') });
  postgres = await createTestPostgres();
  prefix = uniqueRedisPrefix('multi-hub');
  a = await startReplica('a');
  b = await startReplica('b');
  db = a.app.get(Database);
  await db.prisma.cluster.createMany({ data: [{ name: 'c1' }, { name: 'c2' }] });
  const { appSet } = await a.app.get(AppSetsService).apply(
    {
      apiVersion: 'flotilla.dev/v1alpha1',
      kind: 'ApplicationSet',
      metadata: { name: 'shared' },
      spec: {
        generators: [{ list: { elements: [{ cluster: 'c1' }, { cluster: 'c2' }] } }],
        template: {
          metadata: { name: 'shared-{{cluster}}' },
          spec: {
            source: { repoURL: repo.url, targetRevision: 'main', path: 'app' },
            destination: { name: '{{cluster}}', namespace: 'demo' },
          },
        },
      },
    },
    'user:test',
  );
  appSetId = appSet.id;
}, 120_000);

afterAll(async () => {
  await a?.app.close();
  await b?.app.close();
  await postgres?.drop();
  await deleteRedisPrefix(prefix);
  for (const r of [a, b]) if (r) rmSync(r.dataDir, { recursive: true, force: true });
  repo?.remove();
}, 60_000);

describe('two hub replicas on one database', () => {
  it('a replica whose mirror is behind expands at the commit the database records, fetching it first', async () => {
    const r1 = repo.head();
    // Each replica expands once: the first fetch of each mirror happens here.
    expect((await a.expander.expand(appSetId)).status).toBe('Ready');
    expect((await b.expander.expand(appSetId)).status).toBe('Ready');
    expect(await targetRevisions()).toEqual([r1, r1]);
    repositoryId = (await db.prisma.repository.findUniqueOrThrow({ where: { url: repo.url } })).id;

    const r2 = repo.commit({ 'app/cm.yaml': configMap('r2') });
    expect(await a.repos.syncNow(repositoryId)).toMatchObject({ ok: true, changed: true });
    // Replica b never fetched r2; its mirror still says main = r1.
    expect(b.mirrors.mirrors.resolve(repositoryId, 'main')).toBe(r1);

    expect(await b.expander.expand(appSetId)).toMatchObject({ status: 'Ready', updated: 2 });
    expect(await targetRevisions()).toEqual([r2, r2]);
    expect(b.mirrors.mirrors.missingCommits(repositoryId, [r2])).toEqual([]);
  });

  it('an expansion computed from an older commit than the one recorded meanwhile is dropped and redone', async () => {
    const r3 = repo.commit({ 'app/cm.yaml': configMap('r3') });
    expect(await a.repos.syncNow(repositoryId)).toMatchObject({ ok: true, changed: true });
    // Another session holds the appset's row lock, so replica b computes at r3 and then waits to write.
    let r4 = '';
    const expanded = await whileRowLocked(
      () => b.expander.expand(appSetId),
      async () => {
        // Meanwhile replica a records r4.
        r4 = repo.commit({ 'app/cm.yaml': configMap('r4') });
        expect(await a.repos.syncNow(repositoryId)).toMatchObject({ ok: true, changed: true });
      },
    );
    expect(expanded).toMatchObject({ status: 'Ready', updated: 2 });
    expect(await targetRevisions()).toEqual([r4, r4]);
    // The r3 result was never written: targets went from r2 straight to r4.
    const moves = await expandedRevisions();
    expect(moves).not.toContain(r3);
    expect(moves.at(-1)).toBe(r4);
  });

  it('a failure computed from a commit that was fixed meanwhile is dropped: the appset stays Ready at the fix', async () => {
    // A commit whose manifest does not parse: expanded at it, the appset would go to Error.
    const broken = repo.commit({ 'app/cm.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: [unclosed\n' });
    expect(await a.repos.syncNow(repositoryId)).toMatchObject({ ok: true, changed: true });
    let fixed = '';
    // Replica b fails at the broken commit and waits for the row lock to record the failure...
    const expanded = await whileRowLocked(
      () => b.expander.expand(appSetId),
      async () => {
        // ...while replica a records the fix.
        fixed = repo.commit({ 'app/cm.yaml': configMap('fixed') });
        expect(await a.repos.syncNow(repositoryId)).toMatchObject({ ok: true, changed: true });
      },
    );
    expect(expanded).toMatchObject({ status: 'Ready', updated: 2 });
    expect(await targetRevisions()).toEqual([fixed, fixed]);
    const appSet = await db.prisma.applicationSet.findUniqueOrThrow({ where: { id: appSetId } });
    expect(appSet.status).toBe('Ready');
    // The failure at the broken commit was never recorded.
    const failures = await db.prisma.auditEvent.count({
      where: { action: 'appset.expand-failed', scope: 'appset:shared' },
    });
    expect(failures).toBe(0);
    expect(await expandedRevisions()).not.toContain(broken);
  });

  it('a failure at the commit still recorded is written as before', async () => {
    repo.commit({ 'app/cm.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: [unclosed\n' });
    expect(await a.repos.syncNow(repositoryId)).toMatchObject({ ok: true, changed: true });
    const outcome = await b.expander.expand(appSetId);
    expect(outcome.status).toBe('Error');
    const appSet = await db.prisma.applicationSet.findUniqueOrThrow({ where: { id: appSetId } });
    expect(appSet.status).toBe('Error');
    expect(
      await db.prisma.auditEvent.count({ where: { action: 'appset.expand-failed', scope: 'appset:shared' } }),
    ).toBe(1);
    // Fixed again for the test after this one.
    repo.commit({ 'app/cm.yaml': configMap('after-broken') });
    expect(await a.repos.syncNow(repositoryId)).toMatchObject({ ok: true, changed: true });
    expect((await a.expander.expand(appSetId)).status).toBe('Ready');
  });

  it('a fetch that began before the last recorded one moves no ref', async () => {
    const stored = await db.prisma.repositoryRef.findMany({
      where: { repositoryId },
      orderBy: { ref: 'asc' },
    });
    // As if another replica's later fetch had already been recorded.
    const later = new Date(Date.now() + 60_000);
    await db.prisma.repository.update({ where: { id: repositoryId }, data: { lastFetchedAt: later } });
    repo.commit({ 'app/cm.yaml': configMap('r5') });

    expect(await b.repos.syncNow(repositoryId)).toEqual({ ok: true, changed: false });
    const after = await db.prisma.repositoryRef.findMany({
      where: { repositoryId },
      orderBy: { ref: 'asc' },
    });
    expect(after).toEqual(stored);
    expect(
      (await db.prisma.repository.findUniqueOrThrow({ where: { id: repositoryId } })).lastFetchedAt,
    ).toEqual(later);
  });
});

/**
 * Starts `work` (an expansion that will wait to write under the appset's row lock) while another
 * session holds that lock, runs `meanwhile` once it waits, then lets it go on; gives what it gave.
 */
async function whileRowLocked<T>(work: () => Promise<T>, meanwhile: () => Promise<void>): Promise<T> {
  const blocker = new pg.Client({ connectionString: postgres.url });
  await blocker.connect();
  try {
    await blocker.query('BEGIN');
    await blocker.query('SELECT 1 FROM "ApplicationSet" WHERE "id" = $1 FOR UPDATE', [appSetId]);
    const running = work();
    running.catch(() => undefined); // awaited below; a failure while the lock is held is not unhandled
    await waitForLockWaiter(blocker);
    await meanwhile();
    await blocker.query('COMMIT');
    return await running;
  } finally {
    await blocker.end();
  }
}

/** Until some session of the test database waits for a lock (bounded: 10 s). */
async function waitForLockWaiter(admin: pg.Client): Promise<void> {
  for (let i = 0; i < 200; i++) {
    const { rows } = await admin.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_stat_activity
        WHERE datname = current_database() AND wait_event_type = 'Lock'`,
    );
    if ((rows[0]?.n ?? 0) > 0) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('no expansion came to wait for the appset row lock within 10 s');
}
