import 'reflect-metadata';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import {
  type Assignment,
  type AssignmentsResponse,
  COMPARISON_LIMITS,
  type ComparisonReport,
  type TargetDiffView,
  type TargetListItemView,
} from '@flotilla/contract';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTwoClusterFleet, type TwoClusterFleet } from '../testing/two-cluster-fleet.js';

// The agent's comparison on the real hub (PostgreSQL, Redis, Git): stored per target, only ever
// replaced by a later one, served as GET /api/v1/targets/:name/diff, and the sync status of a
// target with automated sync off.

let fleet: TwoClusterFleet;

const CLI = fileURLToPath(new URL('../../../cli/dist/main.js', import.meta.url));
/** The built CLI against the hub: its exit code and what it printed. */
async function flotilla(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [CLI, ...args], {
      env: { ...process.env, ...fleet.cliEnv },
      timeout: 30_000,
    });
    return { code: 0, stdout, stderr };
  } catch (e) {
    const err = e as { code: number; stdout: string; stderr: string };
    return { code: err.code, stdout: err.stdout, stderr: err.stderr };
  }
}
let manual: Assignment;

const DIFF = [
  'diff -u -N live/v1.ConfigMap.web.web-config desired/v1.ConfigMap.web.web-config',
  '--- live/v1.ConfigMap.web.web-config',
  '+++ desired/v1.ConfigMap.web.web-config',
  '@@ -1,3 +1,3 @@',
  ' apiVersion: v1',
  ' data:',
  '-  owner: someone-else',
  '+  owner: platform',
  '',
].join('\n');

function comparison(id: string, at: string, over: Partial<ComparisonReport> = {}): ComparisonReport {
  return {
    type: 'comparison',
    id,
    targetId: manual.targetId,
    at,
    revision: manual.revision,
    bundleDigest: manual.bundleDigest,
    inSync: false,
    compared: 1,
    truncated: false,
    objects: [
      {
        group: '',
        apiVersion: 'v1',
        kind: 'ConfigMap',
        namespace: 'web',
        name: 'web-config',
        action: 'change',
        paths: ['/data/owner'],
        diff: DIFF,
        truncated: false,
      },
    ],
    ...over,
  };
}

const report = (...reports: unknown[]) =>
  fleet.agent<{ code?: string; path?: string }>('eu-1', 'POST', '/api/agent/v1/reports', { reports });
const diffOf = (name: string) => fleet.call<TargetDiffView>('GET', `/api/v1/targets/${name}/diff`);
const syncStatus = async (name: string) =>
  (await fleet.call<TargetListItemView[]>('GET', `/api/v1/targets?name=${name}`)).body[0]?.syncStatus;

describe('target diff', () => {
  beforeAll(async () => {
    fleet = await startTwoClusterFleet();
  }, 180_000);
  afterAll(async () => {
    await fleet?.close();
  }, 60_000);

  it('before any comparison: no diff to show, and a manual target that never synced is Unknown', async () => {
    // The web app once more, with automated sync off (no `automated` in its policy).
    const applied = await fleet.call('POST', '/api/v1/appsets', {
      apiVersion: 'flotilla.dev/v1alpha1',
      kind: 'ApplicationSet',
      metadata: { name: 'manual' },
      spec: {
        generators: [{ list: { elements: [{ cluster: 'eu-1' }] } }],
        template: {
          metadata: { name: 'manual-{{cluster}}' },
          spec: {
            source: { repoURL: fleet.repo.url, targetRevision: 'main', path: 'app' },
            destination: { name: '{{cluster}}', namespace: 'web' },
            syncPolicy: {},
          },
        },
      },
    });
    expect(applied.status).toBe(201);
    await expect
      .poll(
        async () =>
          (
            await fleet.agent<AssignmentsResponse>('eu-1', 'GET', '/api/agent/v1/assignments?wait=0')
          ).body.assignments.find((a) => a.name === 'manual-eu-1'),
        { timeout: 60_000 },
      )
      .toBeDefined();
    const all = await fleet.agent<AssignmentsResponse>('eu-1', 'GET', '/api/agent/v1/assignments?wait=0');
    manual = all.body.assignments.find((a) => a.name === 'manual-eu-1')!;
    expect(manual.syncPolicy.automated).toBe(false);
    const shown = await diffOf('manual-eu-1');
    expect(shown.status).toBe(200);
    expect(shown.body).toMatchObject({ target: 'manual-eu-1', cluster: 'eu-1', comparison: null });
    expect(await syncStatus('manual-eu-1')).toBe('Unknown');
    const missing = await fleet.call<{ code: string }>('GET', '/api/v1/targets/nope/diff');
    expect([missing.status, missing.body.code]).toEqual([404, 'not-found']);
  }, 90_000);

  it('shows the latest comparison; an older one arriving later changes nothing', async () => {
    expect((await report(comparison('cmp-new', '2026-12-07T03:00:02.000Z'))).status).toBe(200);
    expect(
      (await report(comparison('cmp-old', '2026-12-07T03:00:01.000Z', { inSync: true, objects: [] }))).status,
    ).toBe(200);
    const shown = await diffOf('manual-eu-1');
    expect(shown.body.comparison).toEqual({
      observedAt: '2026-12-07T03:00:02.000Z',
      revision: manual.revision,
      bundleDigest: manual.bundleDigest,
      current: true,
      inSync: false,
      compared: 1,
      truncated: false,
      objects: [expect.objectContaining({ kind: 'ConfigMap', name: 'web-config', diff: DIFF })],
    });
    // Automated sync off and never synced: the comparison says OutOfSync.
    expect(shown.body.syncStatus).toBe('OutOfSync');
    expect(await syncStatus('manual-eu-1')).toBe('OutOfSync');

    await report(comparison('cmp-newer', '2026-12-07T03:00:03.000Z', { inSync: true, objects: [] }));
    expect((await diffOf('manual-eu-1')).body.comparison).toMatchObject({ inSync: true, objects: [] });
    expect(await syncStatus('manual-eu-1')).toBe('Synced');
  });

  it('refuses a comparison past its bounds, naming the field, and keeps the one shown', async () => {
    const tooLong = comparison('cmp-big', '2026-12-07T03:00:09.000Z');
    tooLong.objects[0]!.diff = `${DIFF}${'+'.repeat(COMPARISON_LIMITS.diffBytes)}`;
    const refused = await report(tooLong);
    expect([refused.status, refused.body.code, refused.body.path]).toEqual([
      400,
      'reports-invalid',
      'reports[0].objects[0].diff',
    ]);
    expect((await diffOf('manual-eu-1')).body.comparison).toMatchObject({
      observedAt: '2026-12-07T03:00:03.000Z',
      inSync: true,
    });
  });

  it('lists what a sync would prune as deletions; the built CLI marks them, and --exit-code counts only a prune', async () => {
    const removed = (name: string, prune: boolean) => ({
      group: '',
      apiVersion: 'v1',
      kind: 'ConfigMap',
      namespace: 'web',
      name,
      action: 'delete' as const,
      prune,
      paths: [''],
      diff: [
        `diff -u -N live/v1.ConfigMap.web.${name} desired/v1.ConfigMap.web.${name}`,
        `--- live/v1.ConfigMap.web.${name}`,
        `+++ desired/v1.ConfigMap.web.${name}`,
        '@@ -1,4 +0,0 @@',
        '-apiVersion: v1',
        '-data:',
        '-  owner: platform',
        '-kind: ConfigMap',
        '',
      ].join('\n'),
      truncated: false,
    });
    const both = { inSync: true, objects: [removed('old-config', true), removed('pinned-config', false)] };
    expect((await report(comparison('cmp-prune', '2026-12-07T03:00:10.000Z', both))).status).toBe(200);
    const shown = (await diffOf('manual-eu-1')).body.comparison;
    expect(shown?.objects.map((o) => [o.name, o.action, o.prune])).toEqual([
      ['old-config', 'delete', true],
      ['pinned-config', 'delete', false],
    ]);

    const cli = await flotilla('diff', 'manual-eu-1', '--exit-code');
    expect(cli.code).toBe(1);
    expect(cli.stdout).toContain(
      '# ConfigMap web/old-config: no longer in Git; prune is on: a sync deletes it\ndiff -u -N live/v1.ConfigMap.web.old-config',
    );
    expect(cli.stdout).toContain(
      '# ConfigMap web/pinned-config: no longer in Git; not pruned (prune is off, or Prune=false on it): a sync leaves it in place\n',
    );
    expect(cli.stdout).toContain('\n-  owner: platform\n');
    expect(cli.stderr).toContain(
      '0 of 1 object(s) differ, 1 would be pruned, 1 no longer declared but left in place (prune off)',
    );

    // Only a leftover a sync leaves in place: nothing would change.
    const kept = { inSync: true, objects: [removed('pinned-config', false)] };
    expect((await report(comparison('cmp-kept', '2026-12-07T03:00:11.000Z', kept))).status).toBe(200);
    expect((await flotilla('diff', 'manual-eu-1', '--exit-code')).code).toBe(0);
  });
});
