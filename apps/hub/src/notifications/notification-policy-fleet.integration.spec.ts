import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestGitRepo, type TestGitRepo } from '../testing/test-git-repo.js';
import { hubCaller, startTestHub, type TestHub } from '../testing/test-hub.js';
import {
  startTestNotificationReceiver,
  type TestNotificationReceiver,
} from '../testing/test-notification-receiver.js';

const SECRET = 'a-shared-hmac-secret-of-the-team';

interface SourceView {
  id: string;
  status: string;
  appliedCommit: string | null;
  error: { code: string; message: string; path?: string; errors?: { file: string; path: string }[] } | null;
}
interface PolicyView {
  spec: { triggers: string[]; destinations: string[] };
  managedBy: string;
  sourceCommit: string | null;
}

const project = (name: string) =>
  `apiVersion: flotilla.dev/v1alpha1\nkind: Project\nmetadata:\n  name: ${name}\nspec:\n  description: ${name}\n  sourceRepos: ['*']\n  destinations: [{ clusterSelector: {}, namespace: ${name} }]\n`;
const policy = (title: string) => `apiVersion: flotilla.dev/v1alpha1
kind: NotificationPolicy
metadata:
  name: web-failures
spec:
  triggers: [sync-failed, window-held]
  appSets: ['web*']
  destinations: [team]
  template:
    title: '${title}'
`;

/**
 * A NotificationPolicy declared in the fleet repository, on the real hub (PostgreSQL, Redis, Git):
 * applied with the commit, read-only through the API, refused whole when its template does not
 * render or its destination does not exist, and removed with its file.
 */
describe('NotificationPolicy from a fleet repository (PostgreSQL, Redis, Git)', () => {
  let hub: TestHub;
  let fleetRepo: TestGitRepo;
  let receiver: TestNotificationReceiver;
  const call = hubCaller(() => hub);
  const source = async () => {
    const list = await call<SourceView[]>('GET', '/api/v1/fleet-sources');
    return (await call<SourceView>('GET', `/api/v1/fleet-sources/${list.body[0]?.id ?? ''}`)).body;
  };
  const settle = async (state: (s: SourceView) => string, expected: string) => {
    await expect.poll(async () => state(await source()), { timeout: 60_000, interval: 250 }).toBe(expected);
    return source();
  };

  beforeAll(async () => {
    fleetRepo = createTestGitRepo({
      'fleet/projects.yaml': `${project('team-a')}---\n${project('team-b')}`,
      'fleet/notify.yaml': policy('{{ .trigger }} on {{ .appSet }}'),
    });
    receiver = await startTestNotificationReceiver(SECRET, 'ok');
    hub = await startTestHub({
      FLEET_REPOSITORIES: `${fleetRepo.url}#main:fleet`,
      FLOTILLA_SECRETS_KEY: 'ab'.repeat(32),
    });
  }, 120_000);
  afterAll(async () => {
    await hub?.close();
    await receiver?.close();
    fleetRepo?.remove();
  });

  it('refuses the commit whole while the policy names a destination that does not exist', async () => {
    const s = await settle((x) => `${x.status} ${x.error?.code ?? '-'}`, 'Error unknown-destination');
    expect(s.appliedCommit).toBeNull();
    expect(s.error?.path).toBe('spec.destinations[0]');
    expect((await call('GET', '/api/v1/projects/team-a')).status).toBe(404);
    expect((await call('GET', '/api/v1/notifications/policies/web-failures')).status).toBe(404);
  }, 90_000);

  it('applies it once the destination exists, recording the commit; the API may not change it', async () => {
    const created = await call('POST', '/api/v1/notifications/destinations', {
      name: 'team',
      type: 'webhook',
      url: receiver.url,
      secret: SECRET,
    });
    expect(created.status).toBe(201);
    // Refusals of later commits are told through the API's own policy.
    const refusals = await call('POST', '/api/v1/notifications/policies', {
      apiVersion: 'flotilla.dev/v1alpha1',
      kind: 'NotificationPolicy',
      metadata: { name: 'refusals' },
      spec: {
        triggers: ['policy-refused', 'deletion-guard-held'],
        destinations: ['team'],
        digestWindow: '0s',
      },
    });
    expect(refusals.status).toBe(201);
    const commit = fleetRepo.commit({ 'README.md': '# fleet\n' }, 'retry');
    await settle((x) => `${x.status} ${x.appliedCommit ?? '-'}`, `Ready ${commit}`);
    const stored = await call<PolicyView>('GET', '/api/v1/notifications/policies/web-failures');
    expect(stored.body).toMatchObject({
      managedBy: 'git',
      sourceCommit: commit,
      spec: { triggers: ['sync-failed', 'window-held'], destinations: ['team'] },
    });
    const edit = await call<{ code: string }>('POST', '/api/v1/notifications/policies', {
      apiVersion: 'flotilla.dev/v1alpha1',
      kind: 'NotificationPolicy',
      metadata: { name: 'web-failures' },
      spec: { triggers: ['sync-failed'], destinations: ['team'] },
    });
    expect([edit.status, edit.body.code]).toEqual([409, 'managed-by-git']);
    expect((await call('DELETE', '/api/v1/notifications/policies/web-failures')).status).toBe(409);
    // A destination a Git policy names is in use.
    expect((await call('DELETE', '/api/v1/notifications/destinations/team')).status).toBe(409);
  }, 90_000);

  it('refuses a commit whose template does not render, naming file and field; nothing changes', async () => {
    const good = fleetRepo.head();
    const bad = fleetRepo.commit({ 'fleet/notify.yaml': policy('{{ .nosuchfield }}') }, 'bad template');
    const s = await settle((x) => `${x.status} ${x.error?.code ?? '-'}`, 'Error invalid-commit');
    expect(s.appliedCommit).toBe(good);
    expect(s.error?.errors?.[0]).toMatchObject({ file: 'fleet/notify.yaml', path: 'spec.template.title' });
    const stored = await call<PolicyView>('GET', '/api/v1/notifications/policies/web-failures');
    expect(stored.body.sourceCommit).toBe(good);
    // The refusal is the policy-refused trigger, told once with the commit.
    await expect
      .poll(() => receiver.messages().filter((m) => m.event === 'policy-refused').length, { timeout: 30_000 })
      .toBe(1);
    const [told] = receiver.messages().filter((m) => m.event === 'policy-refused');
    expect(told?.signatureValid).toBe(true);
    expect(String(told?.body['text'])).toContain(`fleet commit ${bad.slice(0, 12)} refused`);
  }, 90_000);

  it('tells of a commit the deletion guard holds, once', async () => {
    const good = fleetRepo.commit({ 'fleet/notify.yaml': policy('{{ .trigger }} on {{ .appSet }}') }, 'fix');
    await settle((x) => `${x.status} ${x.appliedCommit ?? '-'}`, `Ready ${good}`);
    // 2 of the source's 3 objects at once: over the 50 % guard.
    fleetRepo.commit({ 'fleet/projects.yaml': null }, 'drop the projects');
    await settle((x) => x.status, 'Held');
    await expect
      .poll(() => receiver.messages().filter((m) => m.event === 'deletion-guard-held').length, {
        timeout: 30_000,
      })
      .toBe(1);
    const [held] = receiver.messages().filter((m) => m.event === 'deletion-guard-held');
    expect(String(held?.body['text'])).toContain('the deletion guard holds a change of fleet-source');
    const restored = fleetRepo.commit(
      { 'fleet/projects.yaml': `${project('team-a')}---\n${project('team-b')}` },
      'projects back',
    );
    await settle((x) => `${x.status} ${x.appliedCommit ?? '-'}`, `Ready ${restored}`);
    expect(receiver.messages().filter((m) => m.event === 'deletion-guard-held')).toHaveLength(1);
  }, 120_000);

  it('removes the policy with its file', async () => {
    const commit = fleetRepo.commit({ 'fleet/notify.yaml': null }, 'no more notifications');
    await settle((x) => `${x.status} ${x.appliedCommit ?? '-'}`, `Ready ${commit}`);
    expect((await call('GET', '/api/v1/notifications/policies/web-failures')).status).toBe(404);
    expect((await call('DELETE', '/api/v1/notifications/policies/refusals')).status).toBe(204);
    expect((await call('DELETE', '/api/v1/notifications/destinations/team')).status).toBe(204);
  }, 90_000);
});
