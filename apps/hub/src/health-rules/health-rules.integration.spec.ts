import 'reflect-metadata';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { type AssignmentsResponse } from '@flotilla/contract';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HubConfigError } from '../config/hub-config.js';
import { createTestGitRepo, type TestGitRepo } from '../testing/test-git-repo.js';
import { startTestHub } from '../testing/test-hub.js';
import { startTwoClusterFleet, type TwoClusterFleet } from '../testing/two-cluster-fleet.js';

// Health rules on the real hub (PostgreSQL, Redis, Git): from its own configuration and from a fleet
// repository, into every cluster's assignments and their ETag; a broken script is refused naming
// its file, and nothing changes.

const rule = (message: string) => `local hs = { status = "Progressing", message = "${message}" }
if obj.status ~= nil and obj.status.conditions ~= nil then
  for _, c in ipairs(obj.status.conditions) do
    if c.type == "Ready" and c.status == "True" then hs.status = "Healthy" end
  end
end
return hs
`;
const CERTIFICATE = 'fleet/resource_customizations/cert-manager.io/Certificate/health.lua';

let fleet: TwoClusterFleet;
let fleetRepo: TestGitRepo;
let hubDir: string;

const assignments = (etag?: string) =>
  fleet.agent<AssignmentsResponse>(
    'eu-1',
    'GET',
    '/api/agent/v1/assignments?wait=0',
    undefined,
    etag ? { 'if-none-match': etag } : {},
  );

interface SourceView {
  id: string;
  status: string;
  seenCommit: string | null;
  appliedCommit: string | null;
  error: { code: string; errors?: { file: string; line: number; code: string; message: string }[] } | null;
  objects: { kind: string; name: string; file: string; commit: string }[];
}
const source = async (): Promise<SourceView> => {
  const list = await fleet.call<{ id: string }[]>('GET', '/api/v1/fleet-sources');
  return (await fleet.call<SourceView>('GET', `/api/v1/fleet-sources/${list.body[0]?.id ?? ''}`)).body;
};
const slow = { timeout: 60_000, interval: 250 };

describe('health rules', () => {
  beforeAll(async () => {
    hubDir = mkdtempSync(join(tmpdir(), 'flotilla-health-rules-'));
    for (const [path, script] of [
      ['cert-manager.io/Certificate/health.lua', rule('hub rule')],
      ['example.com/Widget/health.lua', rule('Waiting for widget')],
    ] as const) {
      mkdirSync(dirname(join(hubDir, path)), { recursive: true });
      writeFileSync(join(hubDir, path), script);
    }
    fleetRepo = createTestGitRepo({
      [CERTIFICATE]: rule('Waiting for certificate'),
      // Argo CD's test data beside a script: never read as a fleet object.
      'fleet/resource_customizations/cert-manager.io/Certificate/testdata/ready.yaml': 'kind: Certificate\n',
      'fleet/README.md': '# fleet\n',
    });
    fleet = await startTwoClusterFleet({
      FLOTILLA_HEALTH_LUA_DIR: hubDir,
      FLEET_REPOSITORIES: `${fleetRepo.url}#main:fleet`,
    });
  }, 180_000);
  afterAll(async () => {
    await fleet?.close();
    fleetRepo?.remove();
    rmSync(hubDir, { recursive: true, force: true });
  }, 60_000);

  it('sends the hub’s rules and the fleet repository’s, the fleet’s winning, each with its source', async () => {
    const head = fleetRepo.head();
    await expect.poll(async () => (await source()).appliedCommit, slow).toBe(head);
    const answer = await assignments();
    expect(answer.status).toBe(200);
    expect(answer.body.healthRules).toEqual([
      {
        key: 'cert-manager.io/Certificate',
        script: rule('Waiting for certificate'),
        source: { origin: 'fleet', file: CERTIFICATE, repoUrl: fleetRepo.url, commit: head },
      },
      {
        key: 'example.com/Widget',
        script: rule('Waiting for widget'),
        source: { origin: 'hub', file: join(hubDir, 'example.com/Widget/health.lua') },
      },
    ]);
    // Read-only through the API like the source's other objects, with the commit it came from.
    expect((await source()).objects).toEqual([
      expect.objectContaining({ kind: 'HealthRule', name: 'cert-manager.io/Certificate', commit: head }),
    ]);
  });

  it('a changed rule changes the ETag; a broken one is refused naming its file and changes nothing', async () => {
    const before = await assignments();
    const etag = before.etag ?? '';
    expect((await assignments(etag)).status).toBe(304);

    const changed = fleetRepo.commit({ [CERTIFICATE]: rule('Issuing') }, 'certificate: say Issuing');
    await expect.poll(async () => (await assignments(etag)).status, slow).toBe(200);
    const after = await assignments();
    expect(after.etag).not.toBe(etag);
    expect(after.body.healthRules[0]).toMatchObject({
      script: rule('Issuing'),
      source: { commit: changed },
    });
    // Only the rule changed: the targets' assignments are as they were.
    expect(after.body.assignments).toEqual(before.body.assignments);

    const broken = fleetRepo.commit(
      { [CERTIFICATE]: 'local hs = {\nhs.status = "Healthy"\nreturn hs\n' },
      'certificate: broken',
    );
    await expect.poll(async () => (await source()).seenCommit, slow).toBe(broken);
    const refused = await source();
    expect(refused.status).toBe('Error');
    expect(refused.appliedCommit).toBe(changed);
    expect(refused.error?.code).toBe('invalid-commit');
    expect(refused.error?.errors).toEqual([
      expect.objectContaining({ file: CERTIFICATE, line: 2, code: 'invalid-lua' }),
    ]);
    const still = await assignments(after.etag ?? '');
    expect(still.status).toBe(304);
    expect((await assignments()).body.healthRules[0]?.script).toBe(rule('Issuing'));
  });

  it('removing the fleet source takes its rules from every cluster at once: the hub’s rule of the key answers again', async () => {
    const before = await assignments();
    const { id } = await source();
    expect((await fleet.call('DELETE', `/api/v1/fleet-sources/${id}`)).status).toBe(204);
    // Woken, not left to the remembered ETag's expiry (minutes).
    await expect.poll(async () => (await assignments(before.etag ?? '')).status, slow).toBe(200);
    expect((await assignments()).body.healthRules.map((r) => [r.key, r.source.origin])).toEqual([
      ['cert-manager.io/Certificate', 'hub'],
      ['example.com/Widget', 'hub'],
    ]);
  }, 90_000);

  it('a hub whose FLOTILLA_HEALTH_LUA_DIR holds a broken script refuses to start, naming the file', async () => {
    const broken = mkdtempSync(join(tmpdir(), 'flotilla-health-rules-broken-'));
    try {
      mkdirSync(join(broken, 'example.com/Widget'), { recursive: true });
      writeFileSync(join(broken, 'example.com/Widget/health.lua'), 'return {\n  status = \n');
      const started = await startTestHub({ FLOTILLA_HEALTH_LUA_DIR: broken }).catch((e: unknown) => e);
      expect(started).toBeInstanceOf(HubConfigError);
      expect((started as HubConfigError).issues).toEqual([
        {
          variable: 'FLOTILLA_HEALTH_LUA_DIR',
          message: `${join(broken, 'example.com/Widget/health.lua')}:3: unexpected symbol near <eof>`,
        },
      ]);
    } finally {
      rmSync(broken, { recursive: true, force: true });
    }
  }, 120_000);
});
