import 'reflect-metadata';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { AssignmentsResponse, Report, TargetDeletionView, TargetReasonCode } from '@flotilla/contract';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTwoClusterFleet, type TwoClusterFleet } from '../testing/two-cluster-fleet.js';

const CLI = fileURLToPath(new URL('../../../cli/dist/main.js', import.meta.url));
const poll = { timeout: 60_000, interval: 200 };

/**
 * One reason per target, end to end on the real hub (PostgreSQL, Redis, Git): each code below is
 * produced the way it happens (agent reports, a person's request, an appset's policy) and checked in
 * the three places it is promised — `GET /api/v1/targets`, the REASON column of `flotilla targets`
 * (the built CLI), and `flotilla_targets_by_reason`. (Terminated runs: test/e2e/terminate-sync.)
 */
describe('target reasons in the API, the CLI column and the metric', () => {
  let fleet: TwoClusterFleet;

  const reasonOf = async (name: string) =>
    (
      await fleet.call<{ name: string; reason: { code: string; message: string } | null }[]>(
        'GET',
        '/api/v1/targets',
      )
    ).body.find((t) => t.name === name)?.reason ?? null;

  /** The REASON cell of a target's row in `flotilla targets` (table output). */
  const cliReason = async (name: string): Promise<string | undefined> => {
    const { stdout } = await promisify(execFile)(process.execPath, [CLI, 'targets'], {
      env: { ...process.env, ...fleet.cliEnv },
      timeout: 30_000,
    });
    const [header, ...rows] = stdout.split('\n');
    const at = header!.indexOf('REASON');
    return rows.find((r) => r.split(/\s+/).includes(name))?.slice(at);
  };

  const metric = async (code: TargetReasonCode): Promise<number> => {
    const text = await fetch(`${fleet.hub.url}/metrics`).then((r) => r.text());
    const line = text.split('\n').find((l) => l.startsWith(`flotilla_targets_by_reason{reason="${code}"}`));
    return Number(line?.slice(line.lastIndexOf(' ') + 1));
  };

  /** The same code in all three places, the message in the API and the CLI. */
  const expectReason = async (name: string, code: TargetReasonCode, message: RegExp) => {
    await expect.poll(async () => (await reasonOf(name))?.code, poll).toBe(code);
    expect((await reasonOf(name))?.message).toMatch(message);
    expect(await cliReason(name)).toMatch(new RegExp(`^${code}: `));
    expect(await metric(code)).toBeGreaterThanOrEqual(1);
  };

  const seen = async (cluster: 'eu-1' | 'us-1') =>
    (await fleet.agent<AssignmentsResponse>(cluster, 'GET', '/api/agent/v1/assignments?wait=0')).body;
  const report = (cluster: 'eu-1' | 'us-1', reports: Report[]) =>
    fleet.agent(cluster, 'POST', '/api/agent/v1/reports', { reports });

  beforeAll(async () => {
    fleet = await startTwoClusterFleet({
      CLUSTER_OFFLINE_SECONDS: '3600',
      // Counted at every scrape, so each shows the change just made.
      METRICS_REASONS_MAX_AGE_SECONDS: '0',
    });
  }, 180_000);
  afterAll(() => fleet?.close(), 60_000);

  it('Progressing and Degraded: synced, and the agent judges its health so', async () => {
    for (const [cluster, status] of [
      ['eu-1', 'Progressing'],
      ['us-1', 'Degraded'],
    ] as const) {
      const a = (await seen(cluster)).assignments.find((x) => x.name === `web-${cluster}`)!;
      const at = new Date().toISOString();
      const sent = await report(cluster, [
        {
          type: 'sync',
          id: randomUUID(),
          targetId: a.targetId,
          at,
          revision: a.revision,
          bundleDigest: a.bundleDigest,
          trigger: 'auto',
          outcome: 'Succeeded',
          startedAt: at,
          finishedAt: at,
          message: '',
          resources: [],
        },
        {
          type: 'health',
          id: randomUUID(),
          targetId: a.targetId,
          at,
          status,
          message: `${status} by the agent`,
          resources: [],
        },
      ]);
      expect(sent.status).toBe(200);
    }
    await expectReason('web-eu-1', 'Progressing', /^progressing$/);
    await expectReason('web-us-1', 'Degraded', /^health Degraded$/);
  });

  it('ManualSyncRequired, then Deleting, then DeletionFailed for a target of an appset with automated sync off', async () => {
    const created = await fleet.call('POST', '/api/v1/appsets', {
      apiVersion: 'flotilla.dev/v1alpha1',
      kind: 'ApplicationSet',
      metadata: { name: 'manual' },
      spec: {
        generators: [{ list: { elements: [{ cluster: 'eu-1' }] } }],
        template: {
          metadata: { name: 'manual-{{cluster}}' },
          spec: {
            source: { repoURL: fleet.repo.url, targetRevision: 'main', path: 'app' },
            destination: { name: '{{cluster}}', namespace: 'manual' },
            syncPolicy: {},
          },
        },
      },
    });
    expect(created.status).toBe(201);
    await expect
      .poll(async () => (await seen('eu-1')).assignments.some((a) => a.name === 'manual-eu-1'), poll)
      .toBe(true);
    await expectReason('manual-eu-1', 'ManualSyncRequired', /^automated sync is off: a person must sync it$/);

    const asked = await fleet.call<TargetDeletionView>(
      'POST',
      '/api/v1/targets/manual-eu-1/delete',
      { cascade: true, reason: 'retiring the manual app' },
      'alice',
    );
    expect(asked.status).toBe(202);
    await expectReason('manual-eu-1', 'Deleting', /^being deleted with its objects \(asked by user:alice/);

    const tombstone = (await seen('eu-1')).deletions?.find((d) => d.name === 'manual-eu-1');
    expect(tombstone?.id).toBe(asked.body.deletionId);
    const at = new Date().toISOString();
    const failed = await report('eu-1', [
      {
        type: 'deletion',
        id: randomUUID(),
        targetId: tombstone!.targetId,
        deletionId: tombstone!.id,
        at,
        outcome: 'Failed',
        startedAt: at,
        finishedAt: at,
        message: 'PreDelete hook failed: batch/Job manual/drain: BackoffLimitExceeded; nothing deleted',
        resources: [],
      },
    ]);
    expect(failed.status).toBe(200);
    await expectReason('manual-eu-1', 'DeletionFailed', /^deletion failed: PreDelete hook failed/);
  });

  /** An appset of the test repository on both clusters, in `namespace`, optionally in a project. */
  const appSet = (name: string, clusters: string[], project?: string) => ({
    apiVersion: 'flotilla.dev/v1alpha1',
    kind: 'ApplicationSet',
    metadata: { name },
    spec: {
      ...(project && { project }),
      generators: [{ list: { elements: clusters.map((cluster) => ({ cluster })) } }],
      template: {
        metadata: { name: `${name}-{{cluster}}` },
        spec: {
          source: { repoURL: fleet.repo.url, targetRevision: 'main', path: 'app' },
          destination: { name: '{{cluster}}', namespace: name },
        },
      },
    },
  });
  const appSetStatus = async (name: string) =>
    (await fleet.call<{ status: string }>('GET', `/api/v1/appsets/${name}`)).body.status;

  it('ProjectDenied: the project narrows after its appset was expanded', async () => {
    const project = (clusters: string[]) => ({
      apiVersion: 'flotilla.dev/v1alpha1',
      kind: 'Project',
      metadata: { name: 'team' },
      spec: {
        sourceRepos: [fleet.repo.url],
        destinations: clusters.map((cluster) => ({ cluster, namespace: 'team' })),
      },
    });
    expect((await fleet.call('POST', '/api/v1/projects', project(['eu-1', 'us-1']))).status).toBe(201);
    expect(
      (await fleet.call('POST', '/api/v1/appsets', appSet('team', ['eu-1', 'us-1'], 'team'))).status,
    ).toBe(201);
    await expect.poll(() => appSetStatus('team'), poll).toBe('Ready');
    expect((await fleet.call('POST', '/api/v1/projects', project(['eu-1']))).status).toBe(200);
    await expect.poll(() => appSetStatus('team'), poll).toBe('Error');
    await expectReason('team-us-1', 'ProjectDenied', /not among the destinations of project 'team'/);
  });

  it('DeletionGuardHeld: an expansion that would delete every target of an appset waits for a person', async () => {
    expect((await fleet.call('POST', '/api/v1/appsets', appSet('guarded', ['eu-1', 'us-1']))).status).toBe(
      201,
    );
    await expect.poll(() => appSetStatus('guarded'), poll).toBe('Ready');
    expect((await fleet.call('POST', '/api/v1/appsets', appSet('guarded', []))).status).toBe(200);
    await expect.poll(() => appSetStatus('guarded'), poll).toBe('Held');
    await expectReason('guarded-eu-1', 'DeletionGuardHeld', /.+/);
    expect(await metric('DeletionGuardHeld')).toBe(2);
  });

  it('SyncFailed, Pinned and AgentOffline in the CLI column too', async () => {
    // SyncFailed: a new target whose first sync the agent reports failed.
    expect((await fleet.call('POST', '/api/v1/appsets', appSet('broken', ['us-1']))).status).toBe(201);
    await expect
      .poll(async () => (await seen('us-1')).assignments.some((a) => a.name === 'broken-us-1'), poll)
      .toBe(true);
    const a = (await seen('us-1')).assignments.find((x) => x.name === 'broken-us-1')!;
    const at = new Date().toISOString();
    const failed = await report('us-1', [
      {
        type: 'sync',
        id: randomUUID(),
        targetId: a.targetId,
        at,
        revision: a.revision,
        bundleDigest: a.bundleDigest,
        trigger: 'auto',
        outcome: 'Failed',
        startedAt: at,
        finishedAt: at,
        message: 'apply ConfigMap broken/web-config: field is immutable',
        resources: [],
      },
    ]);
    expect(failed.status).toBe(200);
    await expectReason(
      'broken-us-1',
      'SyncFailed',
      /^apply ConfigMap broken\/web-config: field is immutable$/,
    );

    // Pinned: a person holds web-us-1 at the revision it runs.
    const pinned = await fleet.call('POST', '/api/v1/targets/web-us-1/pin', {
      revision: a.revision,
      reason: 'hold for the audit',
    });
    expect(pinned.status).toBeLessThan(300);
    await expectReason('web-us-1', 'Pinned', /hold for the audit$/);

    // AgentOffline: a cluster whose agent never called, with a target.
    expect((await fleet.call('POST', '/api/v1/clusters', { name: 'edge-1' })).status).toBe(201);
    expect((await fleet.call('POST', '/api/v1/appsets', appSet('edge', ['edge-1']))).status).toBe(201);
    await expect.poll(() => appSetStatus('edge'), poll).toBe('Ready');
    await expectReason('edge-edge-1', 'AgentOffline', /^agent never seen$/);
  });

  it('WindowClosed in the CLI column too: a deny window over a target not synced', async () => {
    const window = await fleet.call('POST', '/api/v1/windows', {
      name: 'freeze-broken',
      kind: 'deny',
      schedule: '* * * * *',
      duration: '1h',
      applications: ['broken-*'],
      reason: 'INC-12 stabilising',
    });
    expect(window.status).toBe(201);
    await expectReason('broken-us-1', 'WindowClosed', /^blocked by window freeze-broken; next open /);
  });

  it('GeneratorError in the CLI column too: a commit its appset cannot render', async () => {
    const refresh = async () => {
      const repos = await fleet.call<{ id: string }[]>('GET', '/api/v1/repositories');
      for (const r of repos.body) await fleet.call('POST', `/api/v1/repositories/${r.id}/refresh`);
    };
    fleet.repo.commit({
      'gen/config.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: gen\ndata:\n  a: b\n',
    });
    await refresh();
    const gen = appSet('gen', ['eu-1']);
    (gen.spec.template.spec as { source: { path: string } }).source.path = 'gen';
    expect((await fleet.call('POST', '/api/v1/appsets', gen)).status).toBe(201);
    await expect.poll(() => appSetStatus('gen'), poll).toBe('Ready');
    fleet.repo.commit({
      'gen/broken.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n   bad: indent\n',
    });
    await refresh();
    await expectReason('gen-eu-1', 'GeneratorError', /gen\/broken\.yaml/);
  });

  // Last: its commit moves what every appset of the repository wants.
  it('WaitingForRolloutStep: a new commit held at a manual gate of the appset rollout', async () => {
    expect((await fleet.call('POST', '/api/v1/appsets', appSet('staged', ['eu-1', 'us-1']))).status).toBe(
      201,
    );
    await expect.poll(() => appSetStatus('staged'), poll).toBe('Ready');
    const gated = appSet('staged', ['eu-1', 'us-1']);
    (gated.spec as Record<string, unknown>)['rollout'] = {
      steps: [{ name: 'approval', selector: {}, maxUnavailable: 0 }],
    };
    expect((await fleet.call('POST', '/api/v1/appsets', gated)).status).toBe(200);
    fleet.repo.commit(
      {
        'app/config.yaml':
          'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-config\ndata:\n  owner: staged\n',
      },
      'owner staged',
    );
    const repos = await fleet.call<{ id: string }[]>('GET', '/api/v1/repositories');
    for (const r of repos.body) await fleet.call('POST', `/api/v1/repositories/${r.id}/refresh`);
    await expectReason('staged-eu-1', 'WaitingForRolloutStep', /step approval is a manual gate/);
  });
});
