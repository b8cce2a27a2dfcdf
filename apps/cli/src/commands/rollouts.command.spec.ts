import { pinViewSchema, rolloutDetailViewSchema, rolloutViewSchema } from '@flotilla/contract';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { simpleGit } from 'simple-git';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../fleet/free-port.js';
import { LocalFleet } from '../fleet/local-fleet.js';
import { deleteRedisKeys } from '../fleet/redis-server.js';
import { runInProcess } from '../testing/run-in-process.js';
import { headersOf, rowOf, startStandInHub, type StandInHub } from '../testing/stand-in-hub.js';
import { run as history } from './history.command.js';
import { run as pins, runAdd as rollback, type PinView } from './pins.command.js';
import { run as rollouts, type RolloutView } from './rollouts.command.js';

const REDIS_URL = process.env['TEST_REDIS_URL'] ?? 'redis://127.0.0.1:6379';

describe('flotilla rollouts / pins / rollback without a hub', () => {
  it.each([
    [rollouts, 'rollouts', ['status'], 'missing NAME'],
    [rollouts, 'rollouts', ['pause', 'web'], '--reason is required'],
    [rollouts, 'rollouts', ['rewind', 'web'], "unknown sub-command 'rewind'"],
    [pins, 'pins', ['add', 'web-eu-1', '--reason', 'r'], 'missing REVISION'],
    [pins, 'pins', ['add', 'web-eu-1', 'abc'], '--reason is required'],
    [pins, 'pins', ['list', '--until', '2030-01-01T00:00:00Z'], '--until applies to pins add only'],
    [pins, 'pins', ['remove', 'web-eu-1'], '--reason is required'],
    [rollback, 'pins', ['web-eu-1', '--reason', 'r'], 'missing REVISION'],
    [pins, 'pins', ['add', 'abc', '--reason', 'r', '--selector', 'ring=canary'], '--selector needs --appset'],
    [
      pins,
      'pins',
      ['add', '--appset', 'web', 'abc', '--reason', 'r', '--selector', 'ring'],
      "--selector takes k=v pairs separated by commas, not 'ring'",
    ],
    [pins, 'pins', ['remove', 'extra', '--appset', 'web', '--reason', 'r'], "unexpected argument 'extra'"],
  ] as const)('%#: %s %j is a usage error (exit 2)', async (command, name, argv, message) => {
    const r = await runInProcess(command, [...argv]);
    expect(r.code).toBe(2);
    expect(r.out).toBe('');
    expect(r.err).toContain(`flotilla ${name}: ${message}`);
  });

  it('exits 1 naming the URL when nothing listens there', async () => {
    const hub = `http://127.0.0.1:${await freePort()}`;
    const r = await runInProcess(rollouts, ['--hub', hub]);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(new RegExp(`^flotilla rollouts: cannot reach the hub at ${hub}`));
  });
});

/**
 * The commands against a real hub process (embedded PGlite, the test Redis under a private
 * prefix) with one simulated cluster and its agent. The appset's rollout is one manual gate, so a
 * person has to promote it; then the target is pinned back and unpinned.
 */
describe('flotilla rollouts / pins / history against a real hub', () => {
  const work = mkdtempSync(join(tmpdir(), 'flotilla-cli-rollouts-'));
  const redisPrefix = `flotilla-cli-rollouts-${randomBytes(4).toString('hex')}`;
  let fleet: LocalFleet;
  let hub: string[];
  let head: string;
  let target: string;

  const cli = (command: (argv: string[]) => Promise<number>, ...argv: string[]) =>
    runInProcess(command, [...argv, ...hub]);
  const json = async <T>(command: (argv: string[]) => Promise<number>, ...argv: string[]): Promise<T> => {
    const r = await cli(command, ...argv, '-o', 'json');
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    return JSON.parse(r.out) as T;
  };

  beforeAll(async () => {
    const repoDir = join(work, 'repo');
    mkdirSync(join(repoDir, 'apps/web'), { recursive: true });
    writeFileSync(
      join(repoDir, 'apps/web/web.yaml'),
      readFileSync(new URL('testdata/web-manifests.yaml', import.meta.url), 'utf8'),
    );
    const git = simpleGit(repoDir);
    await git.init(['--initial-branch=main']);
    await git.addConfig('user.name', 'CLI spec').addConfig('user.email', 'cli@flotilla.local');
    await git.add('.').commit('web');
    head = (await git.revparse(['HEAD'])).trim();
    fleet = await LocalFleet.start({
      workDir: join(work, 'fleet'),
      clusters: 1,
      namePrefix: 'rl-',
      redisUrl: REDIS_URL,
      redisPrefix,
      pollSeconds: 1,
      hubEnv: { ROLLOUT_TICK_SECONDS: '0.5' },
    });
    hub = ['--hub', fleet.hubUrl];
    const cluster = fleet.clusters[0]!.name;
    target = `web-${cluster}`;
    await fleet.api.createAppSet({
      apiVersion: 'flotilla.dev/v1alpha1',
      kind: 'ApplicationSet',
      metadata: { name: 'web' },
      spec: {
        generators: [{ list: { elements: [{ cluster }] } }],
        template: {
          metadata: { name: 'web-{{cluster}}' },
          spec: {
            source: { repoURL: pathToFileURL(repoDir).toString(), targetRevision: 'main', path: 'apps/web' },
            destination: { name: '{{cluster}}', namespace: 'web' },
          },
        },
        rollout: { steps: [{ name: 'approval', selector: {}, maxUnavailable: 0 }] },
      },
    });
  }, 90_000);

  afterAll(async () => {
    await fleet?.stop();
    await deleteRedisKeys(REDIS_URL, redisPrefix);
    rmSync(work, { recursive: true, force: true });
  });

  it('shows why a rollout waits, promotes it with a reason, and it completes', async () => {
    await expect
      .poll(async () => (await json<RolloutView>(rollouts, 'status', 'web')).message, { timeout: 30_000 })
      .toBe('step approval is a manual gate: promote the rollout to release its 1 cluster(s)');
    const table = await cli(rollouts, 'status', 'web');
    expect(table.out).toMatch(/^Status: +Progressing$/m);
    expect(table.out).toMatch(/^Step: +approval \(1\/1\)$/m);
    expect(table.out).toMatch(new RegExp(`^${target} +rl-\\S+ +- +- +\\S+ *$`, 'm'));

    const promoted = await cli(rollouts, 'promote', 'web', '--reason', 'change ticket 7');
    expect(promoted.code).toBe(0);
    expect(promoted.out).toContain('promoted by');
    await expect
      .poll(async () => (await json<RolloutView>(rollouts, 'status', 'web')).status, { timeout: 60_000 })
      .toBe('Completed');
    const list = await json<RolloutView[]>(rollouts, 'list', '--appset', 'web');
    expect(list.map((r) => [r.revision, r.status])).toEqual([[head, 'Completed']]);
  }, 90_000);

  it('pins with rollback, lists, unpins; history filters by trigger and outcome', async () => {
    const pinned = await cli(rollback, target, 'main', '--reason', 'hold while billing migrates');
    expect(pinned.code).toBe(0);
    expect(pinned.out).toContain(`Pinned ${target} at ${head.slice(0, 7)}`);
    const listed = await json<PinView[]>(pins, 'list');
    expect(listed).toEqual([
      expect.objectContaining({
        target,
        revision: head,
        reason: 'hold while billing migrates',
        expired: false,
      }),
    ]);
    expect((await cli(pins, 'remove', target, '--reason', 'migrated')).code).toBe(0);
    expect(await json<PinView[]>(pins, 'list')).toEqual([]);

    // The appset form: every target, or those a cluster selector picks (none here: 404, nothing pinned).
    const none = await cli(
      pins,
      'add',
      '--appset',
      'web',
      'main',
      '--reason',
      'r',
      '--selector',
      'ring=canary',
    );
    expect(none.code).toBe(1);
    expect(none.err).toContain('clusterSelector');
    const all = await json<PinView[]>(pins, 'add', '--appset', 'web', 'main', '--reason', 'freeze the fleet');
    expect(all.map((p) => p.target)).toEqual([target]);
    const removed = await json<{ unpinned: string[] }>(pins, 'remove', '--appset', 'web', '--reason', 'thaw');
    expect(removed.unpinned).toEqual([target]);

    const auto = await json<{ trigger: string; outcome: string }[]>(
      history,
      '--appset',
      'web',
      '--trigger',
      'auto',
      '--outcome',
      'Succeeded',
    );
    expect(auto.length).toBeGreaterThan(0);
    expect(auto.every((r) => r.trigger === 'auto' && r.outcome === 'Succeeded')).toBe(true);
    expect(await json<unknown[]>(history, '--trigger', 'rollback')).toEqual([]);
    const bad = await cli(history, '--trigger', 'sometimes');
    expect(bad.code).toBe(1);
    expect(bad.err).toContain('trigger');
  }, 60_000);
});

describe('flotilla rollouts and pins -o wide against a stand-in hub', () => {
  const sha = '0123456789abcdef0123456789abcdef01234567';
  const old = 'fedcba9876543210fedcba9876543210fedcba98';
  const rollout = rolloutViewSchema.parse({
    appSet: 'web',
    revision: sha,
    status: 'Progressing',
    step: 'canary',
    stepIndex: 0,
    steps: ['canary', 'rest'],
    message: 'baking',
    stepStartedAt: '2026-12-01T10:05:00.000Z',
    bakeStartedAt: null,
    progress: {
      released: { 'web-eu1': '2026-12-01T10:05:00.000Z' },
      failed: {},
      skipped: { 'web-us1': 'pinned' },
    },
    createdAt: '2026-12-01T10:00:00.000Z',
    finishedAt: null,
  });
  const detail = rolloutDetailViewSchema.parse({
    ...rollout,
    targetCount: 1,
    nextCursor: null,
    targets: [
      {
        name: 'web-eu1',
        cluster: 'eu1',
        desiredRevision: sha,
        releasedRevision: sha,
        lastSyncedRevision: old,
        health: 'Healthy',
        pinnedAt: null,
        releasedAt: '2026-12-01T10:05:00.000Z',
        failed: null,
        skipped: null,
      },
    ],
  });
  const pin = pinViewSchema.parse({
    target: 'web-eu1',
    revision: old,
    bundleDigest: 'sha256:p1',
    reason: 'hold',
    actor: 'user:ana',
    createdAt: '2026-12-01T09:00:00.000Z',
    expiresAt: null,
    expired: false,
  });
  let hub: StandInHub;
  beforeAll(async () => {
    hub = await startStandInHub({
      '/api/v1/rollouts': [rollout],
      '/api/v1/rollouts/web': detail,
      '/api/v1/pins': [pin],
    });
  });
  afterAll(() => hub.close());

  const wideRow = async (command: (argv: string[]) => Promise<number>, argv: string[]) => {
    const r = await runInProcess(command, [...argv, '--hub', hub.url, '-o', 'wide']);
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    const table = r.out.slice(r.out.lastIndexOf('\n\n') + 1).trimStart();
    expect(headersOf(table)).toEqual(Object.keys(rowOf(table)));
    return rowOf(table);
  };

  it('rollouts list adds when the step started, the released, failed and skipped counts', async () => {
    const table = await runInProcess(rollouts, ['--hub', hub.url]);
    expect(headersOf(table.out)).toEqual(['APPSET', 'REVISION', 'STATUS', 'STEP', 'STARTED', 'MESSAGE']);
    expect(await wideRow(rollouts, ['list'])).toEqual({
      APPSET: 'web',
      REVISION: sha,
      STATUS: 'Progressing',
      STEP: 'canary (1/2)',
      STARTED: '2026-12-01T10:00:00.000Z',
      'STEP STARTED': '2026-12-01T10:05:00.000Z',
      RELEASED: '1',
      FAILED: '0',
      SKIPPED: '1',
      FINISHED: '-',
      MESSAGE: 'baking',
    });
  });

  it("rollouts status adds each target's desired revision and when it was released", async () => {
    const table = await runInProcess(rollouts, ['status', 'web', '--hub', hub.url]);
    const targets = table.out.slice(table.out.lastIndexOf('\n\n') + 2);
    expect(headersOf(targets)).toEqual(['TARGET', 'CLUSTER', 'RELEASED', 'SYNCED', 'HEALTH', 'NOTE']);
    expect(await wideRow(rollouts, ['status', 'web'])).toEqual({
      TARGET: 'web-eu1',
      CLUSTER: 'eu1',
      DESIRED: sha,
      RELEASED: sha,
      'RELEASED AT': '2026-12-01T10:05:00.000Z',
      SYNCED: old,
      HEALTH: 'Healthy',
      NOTE: '',
    });
  });

  it('pins list adds the whole commit and the bundle; pins add refuses -o wide', async () => {
    const table = await runInProcess(pins, ['--hub', hub.url]);
    expect(headersOf(table.out)).toEqual(['TARGET', 'REVISION', 'BY', 'SINCE', 'EXPIRES', 'REASON']);
    expect(await wideRow(pins, [])).toEqual({
      TARGET: 'web-eu1',
      REVISION: old,
      BUNDLE: 'sha256:p1',
      BY: 'user:ana',
      SINCE: '2026-12-01T09:00:00.000Z',
      EXPIRES: 'never',
      REASON: 'hold',
    });
    const asked = hub.requests.length;
    const add = await runInProcess(rollback, [
      'web-eu1',
      'main',
      '--reason',
      'r',
      '-o',
      'wide',
      '--hub',
      hub.url,
    ]);
    expect(add.code).toBe(2);
    expect(add.err).toContain('-o wide is for listings');
    expect(hub.requests.length).toBe(asked);
  });
});
