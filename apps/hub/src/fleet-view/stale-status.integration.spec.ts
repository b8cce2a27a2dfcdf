import 'reflect-metadata';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { FleetView, TargetListItemView } from '@flotilla/contract';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Database } from '../db/database.js';
import { startTestHub, type TestHub } from '../testing/test-hub.js';

const CLI = fileURLToPath(new URL('../../../cli/dist/main.js', import.meta.url));
const REVISION = 'a'.repeat(40);
const DIGEST = `sha256:${'1'.repeat(64)}`;

/**
 * A cluster whose agent went quiet keeps its targets' last report, and every view says it is stale
 * rather than show it as current: the targets API, `flotilla targets` (the built CLI) and the fleet
 * matrix. Real hub on PostgreSQL and Redis; the rows are written as the agent's reports leave them.
 */
describe('an offline cluster’s targets are shown stale, not current', () => {
  let hub: TestHub;
  let seenAt: (at: Date | null) => Promise<void>;

  const targets = async () =>
    (await (await fetch(`${hub.url}/api/v1/targets?cluster=eu-1`)).json()) as TargetListItemView[];
  const cliRow = async () => {
    const { stdout } = await promisify(execFile)(process.execPath, [CLI, 'targets', '--cluster', 'eu-1'], {
      env: { ...process.env, FLOTILLA_HUB_URL: hub.url, FLOTILLA_CONFIG: '/nonexistent/flotilla.yaml' },
      timeout: 30_000,
    });
    return stdout
      .split('\n')
      .find((l) => l.includes('web-eu-1'))
      ?.split(/ {2,}/);
  };
  const cell = async () =>
    ((await (await fetch(`${hub.url}/api/v1/fleet`)).json()) as FleetView).rows.find(
      (r) => r.cluster === 'eu-1',
    )?.cells[0];

  beforeAll(async () => {
    hub = await startTestHub({ CLUSTER_OFFLINE_SECONDS: '60', METRICS_REASONS_MAX_AGE_SECONDS: '0' });
    const prisma = hub.app.get(Database).prisma;
    const cluster = await prisma.cluster.create({ data: { name: 'eu-1', lastSeenAt: new Date() } });
    const appSet = await prisma.applicationSet.create({
      data: { name: 'web', apiVersion: 'flotilla.dev/v1alpha1', spec: {}, status: 'Ready' },
    });
    // Synced and Healthy at the revision Git wants, as its agent last reported.
    await prisma.target.create({
      data: {
        name: 'web-eu-1',
        appSetId: appSet.id,
        clusterId: cluster.id,
        namespace: 'web',
        repoUrl: 'https://example.com/apps.git',
        sourcePath: 'app',
        targetRevision: 'main',
        desiredRevision: REVISION,
        bundleDigest: DIGEST,
        releasedRevision: REVISION,
        releasedDigest: DIGEST,
        lastSyncedRevision: REVISION,
        lastSyncedDigest: DIGEST,
        lastSyncedAt: new Date(),
        health: 'Healthy',
        syncPolicy: {},
      },
    });
    seenAt = async (at) => {
      await prisma.cluster.update({ where: { id: cluster.id }, data: { lastSeenAt: at } });
    };
  }, 120_000);
  afterAll(() => hub?.close());

  it('is current while the agent calls', async () => {
    const [t] = await targets();
    expect([t?.syncStatus, t?.health, t?.stale, t?.reason]).toEqual(['Synced', 'Healthy', null, null]);
    const row = await cliRow();
    expect(row?.slice(3, 5)).toEqual(['Synced', 'Healthy']);
    expect((await cell())?.stale).toBe(false);
  });

  it('says stale, with the last-seen time, once the agent has not called within CLUSTER_OFFLINE_SECONDS', async () => {
    const lastSeen = new Date(Date.now() - 3_600_000);
    await seenAt(lastSeen);
    const [t] = await targets();
    // The last report is kept (it is all there is), and marked as such.
    expect([t?.syncStatus, t?.health]).toEqual(['Synced', 'Healthy']);
    expect(t?.stale).toEqual({ lastSeenAt: lastSeen.toISOString() });
    expect(t?.reason).toMatchObject({ code: 'AgentOffline', since: lastSeen.toISOString() });
    const row = await cliRow();
    expect(row?.slice(3, 5)).toEqual(['Synced (stale)', 'Healthy (stale)']);
    expect(row?.at(-1)).toMatch(/^AgentOffline: agent offline since /);
    expect((await cell())?.stale).toBe(true);

    // Never seen at all: stale too, with no time to give.
    await seenAt(null);
    expect((await targets())[0]?.stale).toEqual({ lastSeenAt: null });

    await seenAt(new Date());
    expect((await targets())[0]?.stale).toBeNull();
    expect((await cliRow())?.slice(3, 5)).toEqual(['Synced', 'Healthy']);
  });
});
