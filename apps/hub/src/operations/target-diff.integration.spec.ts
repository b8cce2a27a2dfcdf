import 'reflect-metadata';
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
});
