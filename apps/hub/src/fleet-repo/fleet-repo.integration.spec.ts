import 'reflect-metadata';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { createTestGitRepo, startTestHub, type TestGitRepo, type TestHub } from '../testing/index.js';

// The fleet repository on the real hub (PostgreSQL, Redis, Git): the hub's own objects follow the
// repository commit by commit, record their commit, author and file, refuse API edits, refuse an
// invalid commit whole, hold a commit that deletes too much, and a hub on an empty database rebuilds.

const fixture = (name: string) =>
  readFileSync(new URL(`./testdata/fleet/${name}`, import.meta.url), 'utf8').replaceAll(
    'APP_REPO',
    appRepo.url,
  );
const AUTHOR = 'Flotilla Test <test@flotilla.invalid>';

let hub: TestHub;
let fleetRepo: TestGitRepo;
let appRepo: TestGitRepo;

function caller(target: () => TestHub) {
  return async <T = Record<string, unknown>>(method: string, path: string, body?: unknown) => {
    const res = await fetch(`${target().url}${path}`, {
      method,
      headers: body !== undefined ? { 'content-type': 'application/json' } : {},
      ...(body !== undefined && { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    return { status: res.status, body: (text ? JSON.parse(text) : null) as T };
  };
}
const call = caller(() => hub);

interface SourceView {
  id: string;
  status: string;
  appliedCommit: string | null;
  appliedAuthor: string | null;
  error: {
    code: string;
    message: string;
    errors?: { file: string; document: number; path: string; message: string }[];
  } | null;
  seenCommit?: string | null;
  pendingDeletion: { commit: string; delete: string[] } | null;
  objects?: { kind: string; name: string; file: string }[];
}

async function source(on = call): Promise<SourceView> {
  const list = await on<SourceView[]>('GET', '/api/v1/fleet-sources');
  expect(list.body).toHaveLength(1);
  return (await on<SourceView>('GET', `/api/v1/fleet-sources/${list.body[0]?.id ?? ''}`)).body;
}

/** Polls the hub (it fetches the fleet repository every second) until the source reaches `state`. */
async function settle(state: (s: SourceView) => string, expected: string, on = call): Promise<SourceView> {
  await expect.poll(async () => state(await source(on)), { timeout: 60_000, interval: 250 }).toBe(expected);
  return source(on);
}

const fleetFiles = () => ({
  'fleet/projects.yaml': fixture('projects.yaml'),
  'fleet/clusters.yaml': fixture('clusters.yaml'),
  'fleet/web.yaml': fixture('web.yaml'),
  'fleet/windows.yaml': fixture('windows.yaml'),
  'README.md': '# fleet\n',
});

describe('fleet repository', () => {
  beforeAll(async () => {
    appRepo = createTestGitRepo({
      'app/config.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  a: "1"\n',
    });
    fleetRepo = createTestGitRepo(fleetFiles());
    hub = await startTestHub({ FLEET_REPOSITORIES: `${fleetRepo.url}#main:fleet` });
    for (const name of ['c1', 'c2'])
      expect((await call('POST', '/api/v1/clusters', { name })).status).toBe(201);
  }, 180_000);

  afterAll(async () => {
    await hub?.close();
    fleetRepo?.remove();
    appRepo?.remove();
  }, 120_000);

  it('creates projects, appsets, cluster labels and windows from the commit, each recording it', async () => {
    const head = fleetRepo.head();
    const s = await settle((x) => `${x.status} ${x.appliedCommit ?? '-'}`, `Ready ${head}`);
    expect(s.appliedAuthor).toBe(AUTHOR);
    expect(s.objects?.map((o) => `${o.kind}/${o.name} ${o.file}`)).toEqual([
      'ApplicationSet/web fleet/web.yaml',
      'ClusterGroup/production fleet/clusters.yaml',
      'Project/team-a fleet/projects.yaml',
      'SyncWindow/weekend-freeze fleet/windows.yaml',
    ]);

    const appset = await call<{ project: string; source: Record<string, string> }>(
      'GET',
      '/api/v1/appsets/web',
    );
    expect(appset.body.project).toBe('team-a');
    expect(appset.body.source).toEqual({
      managedBy: 'git',
      repo: fleetRepo.url,
      file: 'fleet/web.yaml',
      commit: head,
      author: AUTHOR,
    });
    const project = await call<{ source: Record<string, string> }>('GET', '/api/v1/projects/team-a');
    expect(project.body.source).toMatchObject({ managedBy: 'git', file: 'fleet/projects.yaml' });
    const c1 = await call<{ labels: Record<string, string> }>('GET', '/api/v1/clusters/c1');
    expect(c1.body.labels).toEqual({ env: 'prod' });
    expect((await call('GET', '/api/v1/windows/weekend-freeze')).status).toBe(200);

    // The labels select c1 only: one target, inside the project.
    await expect
      .poll(
        async () =>
          (await call<{ name: string }[]>('GET', '/api/v1/targets?appSet=web')).body.map((t) => t.name),
        {
          timeout: 60_000,
        },
      )
      .toEqual(['web-c1']);

    const audit = await call<{ items: { actor: string; details: Record<string, unknown> }[] }>(
      'GET',
      '/api/v1/audit?scope=appset:web&action=appset.created',
    );
    expect(audit.body.items[0]).toMatchObject({
      actor: `git:${AUTHOR}`,
      details: { commit: head, author: AUTHOR, file: 'fleet/web.yaml' },
    });
  }, 120_000);

  it('refuses API edits of Git-managed objects, naming the repository file', async () => {
    const appset = await call<{ document: unknown }>('GET', '/api/v1/appsets/web');
    const edit = await call<{ code: string; message: string; path: string }>(
      'POST',
      '/api/v1/appsets',
      appset.body.document,
    );
    expect(edit.status).toBe(409);
    expect(edit.body).toMatchObject({ code: 'git-managed', path: 'fleet/web.yaml' });
    expect(edit.body.message).toContain(`change fleet/web.yaml in ${fleetRepo.url}`);
    expect((await call('DELETE', '/api/v1/appsets/web')).status).toBe(409);
    const project = await call<{ document: unknown }>('GET', '/api/v1/projects/team-a');
    expect((await call('POST', '/api/v1/projects', project.body.document)).status).toBe(409);
  });

  it('refuses a commit with an invalid object whole, naming file, document and field', async () => {
    const good = fleetRepo.head();
    const bad = fleetRepo.commit(
      {
        'fleet/projects.yaml': fixture('projects.yaml').replace(
          'description: Team A',
          'description: Team A v2',
        ),
        'fleet/windows.yaml': fixture('windows.yaml').replace(
          "schedule: '0 0 * * 6'",
          "schedule: 'every saturday'",
        ),
      },
      'freeze on saturdays',
    );
    const s = await settle((x) => `${x.status} ${x.error?.code ?? '-'}`, 'Error invalid-commit');
    expect(s.appliedCommit).toBe(good);
    expect(s.error?.message).toBe(`commit ${bad.slice(0, 12)} has 1 invalid object(s); nothing changed`);
    expect(s.error?.errors?.[0]).toMatchObject({
      file: 'fleet/windows.yaml',
      document: 0,
      path: 'spec.schedule',
    });
    const project = await call<{ document: { spec: { description: string } } }>(
      'GET',
      '/api/v1/projects/team-a',
    );
    expect(project.body.document.spec.description).toBe('Team A');

    const fixed = fleetRepo.commit({ 'fleet/windows.yaml': fixture('windows.yaml') }, 'back to cron');
    await settle((x) => `${x.status} ${x.appliedCommit ?? '-'}`, `Ready ${fixed}`);
    const updated = await call<{ document: { spec: { description: string } }; source: { commit: string } }>(
      'GET',
      '/api/v1/projects/team-a',
    );
    expect(updated.body.document.spec.description).toBe('Team A v2');
    expect(updated.body.source.commit).toBe(fixed);
  }, 120_000);

  it('refuses a commit whose admission policy does not compile, naming file, field and expression', async () => {
    const good = fleetRepo.head();
    await settle((x) => `${x.status} ${x.appliedCommit ?? '-'}`, `Ready ${good}`);
    const policy = (expression: string) =>
      [
        'apiVersion: admissionregistration.k8s.io/v1',
        'kind: ValidatingAdmissionPolicy',
        'metadata: {name: replica-limit}',
        'spec:',
        '  matchConstraints:',
        '    resourceRules: [{apiGroups: [apps], apiVersions: [v1], operations: [CREATE], resources: [deployments]}]',
        '  validations:',
        `    - expression: ${JSON.stringify(expression)}`,
        '',
      ].join('\n');
    fleetRepo.commit({ 'fleet/policies.yaml': policy('object.spec.replicas <= ') }, 'broken policy');
    const s = await settle((x) => `${x.status} ${x.error?.code ?? '-'}`, 'Error invalid-commit');
    expect(s.appliedCommit).toBe(good);
    expect(s.error?.errors?.[0]).toMatchObject({
      file: 'fleet/policies.yaml',
      document: 0,
      path: 'spec.validations[0].expression',
    });
    expect(s.error?.errors?.[0]?.message).toContain('in CEL expression "object.spec.replicas <= "');

    const fixed = fleetRepo.commit(
      { 'fleet/policies.yaml': policy('object.spec.replicas <= 5') },
      'fix policy',
    );
    await settle((x) => `${x.status} ${x.appliedCommit ?? '-'}`, `Ready ${fixed}`);
    const removed = fleetRepo.commit({ 'fleet/policies.yaml': null }, 'no policies yet');
    await settle((x) => `${x.status} ${x.appliedCommit ?? '-'}`, `Ready ${removed}`);
  }, 120_000);

  it('allows an edit of a Git-managed window under a break-glass, audited and shown as diverging until Git writes it', async () => {
    const window = { kind: 'deny', schedule: '0 0 * * 6', duration: '24h', timeZone: 'Europe/Paris' };
    const refused = await call<{ code: string; message: string; path: string }>(
      'PUT',
      '/api/v1/windows/weekend-freeze',
      window,
    );
    expect(refused.status).toBe(409);
    expect(refused.body).toMatchObject({ code: 'git-managed', path: 'fleet/windows.yaml' });
    expect(refused.body.message).toContain(`change fleet/windows.yaml in ${fleetRepo.url}`);
    expect(refused.body.message).toContain('or open a break-glass');

    const c1 = await call<{ id: number }>('POST', '/api/v1/break-glass', {
      scope: 'cluster',
      name: 'c1',
      reason: 'incident 42: the freeze must be shorter',
      durationMinutes: 30,
      allowSyncOutsideWindows: true,
    });
    expect(c1.status).toBe(201);
    expect((await call('PUT', '/api/v1/windows/weekend-freeze', window)).status).toBe(200);
    const diverged = await source();
    const entry = diverged.objects?.find((o) => o.name === 'weekend-freeze') as
      { diverged: unknown } | undefined;
    expect(entry?.diverged).toMatchObject({ by: 'user:admin', breakGlassId: c1.body.id });
    const audit = await call<{ items: { details: Record<string, unknown> }[] }>(
      'GET',
      `/api/v1/audit?scope=fleet-source:${diverged.id}&action=fleet.diverged`,
    );
    expect(audit.body.items[0]?.details).toMatchObject({ kind: 'SyncWindow', name: 'weekend-freeze' });
    expect(
      (await call('POST', `/api/v1/break-glass/${c1.body.id}/close`, { reason: 'resolved' })).status,
    ).toBe(200);

    // The next commit writes Git's version back and the divergence ends.
    const next = fleetRepo.commit({ 'fleet/README.md': '# fleet objects\n' }, 'docs');
    await settle((x) => `${x.status} ${x.appliedCommit ?? '-'}`, `Ready ${next}`);
    const caughtUp = await source();
    const again = caughtUp.objects?.find((o) => o.name === 'weekend-freeze') as
      { diverged: unknown } | undefined;
    expect(again?.diverged).toBeNull();
    const live = await call<{ duration: string }>('GET', '/api/v1/windows/weekend-freeze');
    expect(live.body.duration).toBe('48h');
  }, 120_000);

  it('holds a commit that deletes every object until a person confirms it; a revert restores them', async () => {
    const kept = fleetRepo.head();
    const truncated = fleetRepo.commit(
      {
        'fleet/projects.yaml': null,
        'fleet/clusters.yaml': null,
        'fleet/web.yaml': null,
        'fleet/windows.yaml': null,
      },
      'oops',
    );
    const held = await settle((x) => x.status, 'Held');
    expect(held.appliedCommit).toBe(kept);
    expect(held.pendingDeletion).toMatchObject({
      commit: truncated,
      delete: [
        'ApplicationSet/web',
        'ClusterGroup/production',
        'Project/team-a',
        'SyncWindow/weekend-freeze',
      ],
    });
    expect((await call('GET', '/api/v1/appsets/web')).status).toBe(200);

    const confirmPath = `/api/v1/fleet-sources/${held.id}/confirm`;
    const wrong = await call<{ code: string }>('POST', confirmPath, { commit: '0'.repeat(40), reason: 'x' });
    expect(wrong.status).toBe(409);
    expect(wrong.body.code).toBe('hold-changed');
    const confirmed = await call<{ status: string; deleted: string[] }>('POST', confirmPath, {
      commit: truncated,
      reason: 'retiring team A',
    });
    expect(confirmed.status).toBe(200);
    expect(confirmed.body.status).toBe('Ready');
    expect([...confirmed.body.deleted].sort()).toEqual(held.pendingDeletion?.delete);
    expect((await call('GET', '/api/v1/appsets/web')).status).toBe(404);
    expect((await call('GET', '/api/v1/windows/weekend-freeze')).status).toBe(404);
    const audit = await call<{ items: { details: Record<string, unknown> }[] }>(
      'GET',
      `/api/v1/audit?scope=fleet-source:${held.id}&action=fleet.applied-confirmed`,
    );
    expect(audit.body.items[0]?.details).toMatchObject({ commit: truncated, reason: 'retiring team A' });

    const restored = fleetRepo.commit(fleetFiles(), 'revert oops');
    await settle((x) => `${x.status} ${x.appliedCommit ?? '-'}`, `Ready ${restored}`);
    expect((await call('GET', '/api/v1/appsets/web')).status).toBe(200);
  }, 120_000);

  it('rebuilds the same objects on a hub started on an empty database', async () => {
    const second = await startTestHub({ FLEET_REPOSITORIES: `${fleetRepo.url}#main:fleet` });
    const on = caller(() => second);
    try {
      for (const name of ['c1', 'c2'])
        expect((await on('POST', '/api/v1/clusters', { name })).status).toBe(201);
      await settle((x) => `${x.status} ${x.appliedCommit ?? '-'}`, `Ready ${fleetRepo.head()}`, on);
      const names = async (target: typeof call, path: string) =>
        (await target<{ name: string }[]>('GET', path)).body.map((x) => x.name).sort();
      for (const path of ['/api/v1/appsets', '/api/v1/projects', '/api/v1/windows'])
        expect(await names(on, path)).toEqual(await names(call, path));
      await expect
        .poll(async () => names(on, '/api/v1/targets?appSet=web'), { timeout: 60_000 })
        .toEqual(await names(call, '/api/v1/targets?appSet=web'));
    } finally {
      await second.close();
    }
  }, 180_000);
  it('an appset naming a RolloutStrategy rolls out by its steps, and a change of the strategy reaches the appset', async () => {
    const strategy = (bake: string) =>
      [
        'apiVersion: flotilla.dev/v1alpha1',
        'kind: RolloutStrategy',
        'metadata:',
        '  name: canary-first',
        'spec:',
        '  steps:',
        '    - name: canary',
        '      selector:',
        '        matchLabels:',
        '          env: prod',
        `      bakeTime: ${bake}`,
        '',
      ].join('\n');
    const web = fixture('web.yaml').replace(
      '  project: team-a\n',
      '  project: team-a\n  rolloutStrategy: canary-first\n',
    );
    const rolloutOf = async () =>
      (
        await call<{ document: { spec: { rollout?: { steps: { name: string; bakeTime: string }[] } } } }>(
          'GET',
          '/api/v1/appsets/web',
        )
      ).body.document.spec.rollout?.steps.map((st) => `${st.name} ${st.bakeTime}`);

    const first = fleetRepo.commit(
      { 'fleet/rollout.yaml': strategy('30s'), 'fleet/web.yaml': web },
      'web rolls out canary first',
    );
    await settle((x) => `${x.status} ${x.appliedCommit ?? '-'}`, `Ready ${first}`);
    expect(await rolloutOf()).toEqual(['canary 30s']);

    // Only the strategy's file changes; the appset that names it follows.
    const second = fleetRepo.commit({ 'fleet/rollout.yaml': strategy('5m') }, 'longer bake');
    await settle((x) => `${x.status} ${x.appliedCommit ?? '-'}`, `Ready ${second}`);
    expect(await rolloutOf()).toEqual(['canary 5m']);
    const audit = await call<{ items: { details: { commit: string } }[] }>(
      'GET',
      '/api/v1/audit?scope=appset:web&action=appset.updated',
    );
    expect(audit.body.items[0]?.details.commit).toBe(second);
  }, 120_000);

  const wideAppSet = () =>
    [
      'apiVersion: flotilla.dev/v1alpha1',
      'kind: ApplicationSet',
      'metadata:',
      '  name: wide',
      'spec:',
      '  generators:',
      '    - list:',
      '        elements: [{ cluster: c1 }, { cluster: c2 }]',
      '  template:',
      '    metadata:',
      "      name: 'wide-{{cluster}}'",
      '    spec:',
      `      source: { repoURL: '${appRepo.url}', targetRevision: main, path: app }`,
      "      destination: { name: '{{cluster}}', namespace: web }",
      '',
    ].join('\n');

  it('counts targets, not objects: removing 1 of 6 objects that holds 2 of 3 targets is held', async () => {
    const added = fleetRepo.commit({ 'fleet/wide.yaml': wideAppSet() }, 'wide');
    await settle((x) => `${x.status} ${x.appliedCommit ?? '-'}`, `Ready ${added}`);
    await expect
      .poll(async () => (await call<unknown[]>('GET', '/api/v1/targets?appSet=wide')).body.length, {
        timeout: 60_000,
      })
      .toBe(2);

    const removed = fleetRepo.commit({ 'fleet/wide.yaml': null }, 'drop wide');
    const held = await settle((x) => `${x.status} ${x.pendingDeletion?.commit ?? '-'}`, `Held ${removed}`);
    expect(held.pendingDeletion).toMatchObject({
      delete: ['ApplicationSet/wide'],
      currentCount: 6,
      deletePercent: 16.7,
      targets: { current: 3, deleting: 2, baseline: 3, deletePercent: 66.7 },
    });
    expect(held.error?.message).toContain('2 of 3 targets');
    expect((await call<unknown[]>('GET', '/api/v1/targets?appSet=wide')).body).toHaveLength(2);

    const ok = await call('POST', `/api/v1/fleet-sources/${held.id}/confirm`, {
      commit: removed,
      reason: 'wide is retired',
    });
    expect(ok.status).toBe(200);
    expect((await call('GET', '/api/v1/appsets/wide')).status).toBe(404);
  }, 150_000);

  it('refuses an appset from Git that the API would refuse, naming file and field on the source and the appset', async () => {
    const kept = fleetRepo.head();
    const web = fixture('web.yaml').replace(
      '  project: team-a\n',
      '  project: team-a\n  deletionGuard:\n    maxDeletePercent: everything\n',
    );
    // The API refuses this document...
    const viaApi = await call<{ code: string; path: string }>('POST', '/api/v1/appsets/preview', parse(web));
    expect(viaApi.status).toBe(400);
    expect(viaApi.body).toMatchObject({
      code: 'invalid-appset',
      path: 'spec.deletionGuard.maxDeletePercent',
    });
    // ...and so does the fleet repository, whole.
    const bad = fleetRepo.commit({ 'fleet/web.yaml': web }, 'no limit');
    const s = await settle((x) => `${x.status} ${x.seenCommit ?? '-'}`, `Error ${bad}`);
    expect(s.appliedCommit).toBe(kept);
    expect(s.error?.code).toBe('invalid-commit');
    expect(s.error?.errors).toEqual([
      expect.objectContaining({
        file: 'fleet/web.yaml',
        document: 0,
        path: 'spec.deletionGuard.maxDeletePercent',
      }),
    ]);
    const appset = await call<{
      status: string;
      document: { spec: Record<string, unknown> };
      fleetErrors: { path: string; commit: string }[];
    }>('GET', '/api/v1/appsets/web');
    expect(appset.body.document.spec['deletionGuard']).toBeUndefined();
    expect(appset.body.fleetErrors).toEqual([
      expect.objectContaining({ path: 'spec.deletionGuard.maxDeletePercent', commit: bad }),
    ]);

    const fixed = fleetRepo.commit({ 'fleet/web.yaml': fixture('web.yaml') }, 'limit back');
    await settle((x) => `${x.status} ${x.appliedCommit ?? '-'}`, `Ready ${fixed}`);
    expect((await call<{ fleetErrors: unknown[] }>('GET', '/api/v1/appsets/web')).body.fleetErrors).toEqual(
      [],
    );
  }, 150_000);
});
