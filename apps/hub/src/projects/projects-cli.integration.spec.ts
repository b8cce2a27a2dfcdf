import 'reflect-metadata';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ProjectView, SyncWindowView, TargetOperationView } from '@flotilla/contract';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTwoClusterFleet, type TwoClusterFleet } from '../testing/two-cluster-fleet.js';

const CLI = fileURLToPath(new URL('../../../cli/dist/main.js', import.meta.url));

interface Outcome {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Projects, sync windows and requested syncs from the built CLI against the real hub (PostgreSQL,
 * Redis, Git): created, changed and deleted without curl, and a refusal of the hub said in the
 * words the person typed — the flag (`--time-zone`), or the file's field when the input came in a
 * file. Refused input changes nothing.
 */
describe('flotilla projects, windows and operations against the hub', () => {
  let fleet: TwoClusterFleet;
  const dir = mkdtempSync(join(tmpdir(), 'flotilla-projects-cli-'));
  const flotilla = (...args: string[]): Promise<Outcome> =>
    new Promise((resolve) => {
      execFile(
        process.execPath,
        [CLI, ...args],
        { env: { ...process.env, ...fleet.cliEnv }, timeout: 60_000 },
        (err, stdout, stderr) => {
          const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0;
          resolve({ code, stdout, stderr });
        },
      );
    });

  beforeAll(async () => {
    // Destinations and repository credentials are sealed under the hub's secrets key.
    fleet = await startTwoClusterFleet({ FLOTILLA_SECRETS_KEY: randomBytes(32).toString('hex') });
  }, 180_000);
  afterAll(async () => {
    await fleet?.close();
    rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  it('creates, updates, lists and deletes a project from flags', async () => {
    const created = await flotilla(
      'projects',
      'create',
      'team-a',
      '--source-repos',
      `${fleet.repo.url},https://git.example.com/a/*`,
      '--destinations',
      'eu-*:web',
      '--description',
      'team A',
    );
    expect(created.stderr).toBe('');
    expect(created.code).toBe(0);
    expect(created.stdout).toMatch(/^Created project team-a\./);

    const updated = await flotilla(
      'projects',
      'update',
      'team-a',
      '--sync-windows',
      'night-freeze',
      '-o',
      'json',
    );
    expect(updated.code).toBe(0);
    const view = JSON.parse(updated.stdout) as ProjectView;
    // The fields not given stay as they were.
    expect((view.document as { spec: unknown }).spec).toMatchObject({
      description: 'team A',
      sourceRepos: [fleet.repo.url, 'https://git.example.com/a/*'],
      destinations: [{ cluster: 'eu-*', namespace: 'web' }],
      syncWindows: ['night-freeze'],
    });

    const again = await flotilla('projects', 'create', 'team-a', '--source-repos', '*');
    expect(again.code).toBe(2);
    expect(again.stderr).toContain("project team-a exists: change it with 'flotilla projects update team-a'");

    const listed = await flotilla('projects', 'list', '-o', 'json');
    expect((JSON.parse(listed.stdout) as ProjectView[]).map((p) => p.name)).toContain('team-a');
    const deleted = await flotilla('projects', 'delete', 'team-a');
    expect(deleted.code).toBe(0);
    expect((await fleet.call('GET', '/api/v1/projects/team-a')).status).toBe(404);
  }, 60_000);

  it('names the flag the person typed when the hub refuses a field, and the field of a file', async () => {
    const noRepos = await flotilla('projects', 'create', 'team-b', '--source-repos', '');
    expect(noRepos.code).toBe(1);
    expect(noRepos.stderr).toMatch(/^flotilla projects: POST .* → 400 invalid-request: .*--source-repos: /);
    expect(noRepos.stderr).toContain('(--source-repos; API field spec.sourceRepos)');

    const badZone = await flotilla(
      'windows',
      'create',
      'freeze',
      '--kind',
      'deny',
      '--schedule',
      '0 1 * * *',
      '--duration',
      '1h',
      '--time-zone',
      'Mars/Olympus',
    );
    expect(badZone.code).toBe(1);
    expect(badZone.stderr).toMatch(
      /^flotilla windows: POST .* → 400 invalid-time-zone: .*--time-zone: unknown time zone 'Mars\/Olympus'/,
    );
    expect(badZone.stderr).toContain('(--time-zone; API field timeZone)');

    // The same window from a file: its own field name, as the file spells it.
    const file = join(dir, 'freeze.yaml');
    writeFileSync(file, 'kind: deny\nschedule: "0 1 * * *"\nduration: 1h\ntimeZone: Mars/Olympus\n');
    const fromFile = await flotilla('windows', 'create', 'freeze', '-f', file);
    expect(fromFile.code).toBe(1);
    expect(fromFile.stderr).toMatch(/timeZone: .*\(at timeZone\)$/m);
    expect(fromFile.stderr).not.toContain('--time-zone');

    const tooLong = await flotilla('sync', 'web-eu-1', '--reason', 'x', '--expires-in-minutes', '99999');
    expect(tooLong.code).toBe(1);
    expect(tooLong.stderr).toContain('(--expires-in-minutes; API field expiresInMinutes)');

    const notAKey = join(dir, 'id_ed25519');
    writeFileSync(notAKey, 'not a key\n');
    const badKey = await flotilla('repositories', 'credentials', fleet.repo.url, '--ssh-key', notAKey);
    expect(badKey.code).toBe(1);
    expect(badKey.stderr).toContain('--ssh-key: must be a PEM/OpenSSH private key');
    expect(badKey.stderr).toContain('(--ssh-key; API field privateKey)');
    const repo = await flotilla('repositories', 'get', fleet.repo.url);
    expect(repo.code).toBe(0);
    expect(repo.stdout).toMatch(/^Credentials: +none$/m);

    // A missing field of a request built from flags is named by the flag that gives it.
    const unnamed = await flotilla('appsets', 'confirm-expansion', 'web', '--reason', 'the clusters went');
    expect(unnamed.code).toBe(1);
    expect(unnamed.stderr).toContain('(--inputs-hash; API field inputsHash)');
    const preview = await flotilla('appsets', 'preview', 'web', '-o', 'json');
    expect(preview.stderr).toBe('');
    expect(JSON.parse(preview.stdout)).toMatchObject({ create: [], delete: [], guard: { wouldHold: false } });

    const badBatch = await flotilla('operations', 'list', '--batch', 'not-a-batch');
    expect(badBatch.code).toBe(1);
    expect(badBatch.stderr).toContain('(--batch; API field batchId)');

    // Nothing of the refused input was kept.
    expect((await fleet.call<SyncWindowView[]>('GET', '/api/v1/windows')).body).toEqual([]);
    expect((await fleet.call('GET', '/api/v1/projects/team-b')).status).toBe(404);
    expect(
      (await fleet.call<TargetOperationView[]>('GET', '/api/v1/targets/web-eu-1/operations')).body,
    ).toEqual([]);
  }, 60_000);

  it('creates, updates and deletes a window; the calendar says when it is active', async () => {
    const created = await flotilla(
      'windows',
      'create',
      'night-freeze',
      '--kind',
      'deny',
      '--schedule',
      '0 1 * * *',
      '--duration',
      '1h',
      '--time-zone',
      'Europe/Paris',
      '--clusters',
      'eu-*,us-*',
      '--reason',
      'no change at night',
    );
    expect(created.stderr).toBe('');
    expect(created.code).toBe(0);
    const updated = await flotilla('windows', 'update', 'night-freeze', '--duration', '2h', '-o', 'json');
    expect(updated.code).toBe(0);
    expect(JSON.parse(updated.stdout)).toMatchObject({
      name: 'night-freeze',
      version: 2,
      duration: '2h',
      timeZone: 'Europe/Paris',
      clusters: ['eu-*', 'us-*'],
    });
    const calendar = await flotilla(
      'windows',
      'calendar',
      'night-freeze',
      '--since',
      '2026-06-01T00:00:00Z',
      '--days',
      '1',
      '-o',
      'json',
    );
    expect(calendar.code).toBe(0);
    // 01:00-03:00 in Paris in June (now 2 h long) is 23:00-01:00 UTC, clipped to the day asked.
    expect(JSON.parse(calendar.stdout)).toMatchObject({
      intervals: [
        { start: '2026-06-01T00:00:00.000Z', end: '2026-06-01T01:00:00.000Z' },
        { start: '2026-06-01T23:00:00.000Z', end: '2026-06-02T00:00:00.000Z' },
      ],
    });
    const deleted = await flotilla('windows', 'delete', 'night-freeze', '--reason', 'not needed');
    expect(deleted.code).toBe(0);
    expect((await fleet.call('GET', '/api/v1/windows/night-freeze')).status).toBe(404);
  }, 60_000);

  it("creates and replaces a notification destination from a file; a bad one keeps the file's field", async () => {
    const file = join(dir, 'chat.yaml');
    writeFileSync(file, 'name: chat\ntype: slack\nurl: https://hooks.example.com/services/T0/B0/x\n');
    const created = await flotilla('notifications', 'apply-destination', '-f', file);
    expect(created.stderr).toBe('');
    expect(created.stdout).toBe('Notification destination chat created.\n');
    const replaced = await flotilla('notifications', 'apply-destination', '-f', file);
    expect(replaced.stdout).toBe('Notification destination chat updated.\n');
    const bad = join(dir, 'bad.yaml');
    writeFileSync(bad, 'name: other\ntype: slack\nurl: not a url\n');
    const refused = await flotilla('notifications', 'apply-destination', '-f', bad);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('(at url)');
    const listed = await flotilla('notifications', 'destinations', '-o', 'json');
    expect((JSON.parse(listed.stdout) as { name: string }[]).map((d) => d.name)).toEqual(['chat']);
  }, 60_000);

  it('lists the syncs asked of a target; --wait without a terminal prints the result alone', async () => {
    // No agent runs it here: --wait gives up at --timeout, exit 1, the operation still Pending.
    const waited = await flotilla(
      'sync',
      'web-eu-1',
      '--reason',
      'by hand',
      '--wait',
      '--timeout',
      '1',
      '-o',
      'json',
    );
    expect(waited.stderr).toBe('');
    expect(waited.code).toBe(1);
    const op = JSON.parse(waited.stdout) as TargetOperationView;
    expect(op.state).toBe('Pending');
    const table = await flotilla('sync', 'web-eu-1', '--reason', 'again', '--wait', '--timeout', '1');
    expect(table.stderr).toBe('');
    expect(table.stdout).toMatch(/^Operation: +\S+\nTarget: +web-eu-1\nState: +Pending/);

    const listed = await flotilla('operations', 'list', 'web-eu-1', '-o', 'json');
    expect(listed.code).toBe(0);
    expect((JSON.parse(listed.stdout) as TargetOperationView[]).map((o) => o.reason)).toEqual([
      'again',
      'by hand',
    ]);
    const cancelled = await flotilla('operations', 'cancel', op.id, '--reason', 'not needed', '-o', 'json');
    expect(cancelled.stderr).toBe('');
    expect(cancelled.code).toBe(0);
    expect((JSON.parse(cancelled.stdout) as TargetOperationView).state).toBe('Cancelled');
  }, 60_000);
});
