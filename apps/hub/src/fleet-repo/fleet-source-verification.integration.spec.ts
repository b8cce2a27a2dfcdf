import 'reflect-metadata';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestGitRepo, startTestHub, type TestGitRepo, type TestHub } from '../testing/index.js';

// A repository's signed-commit requirement declared in the fleet repository (kind SourceVerification)
// on the real hub: applied with history, managed by Git (the API refuses edits), an invalid key line
// refuses the commit naming file and field, and removing the object returns the repository to `none`.

const poll = { timeout: 60_000, interval: 250 };
let hub: TestHub;
let fleetRepo: TestGitRepo;
let appRepo: TestGitRepo;
let keys: string;
let signer: string;

interface VerificationView {
  mode: string;
  managedBy: string | null;
  fingerprints: string[];
  setBy: string | null;
}

async function call<T>(method: string, path: string, body?: unknown) {
  const res = await fetch(`${hub.url}${path}`, {
    method,
    headers: body !== undefined ? { 'content-type': 'application/json' } : {},
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : null) as T };
}

const PROJECT =
  'apiVersion: flotilla.dev/v1alpha1\nkind: Project\nmetadata:\n  name: team\nspec:\n  sourceRepos: ["*"]\n  destinations:\n    - cluster: "*"\n      namespace: team\n';

const declaration = (allowedSigners: string) =>
  [
    'apiVersion: flotilla.dev/v1alpha1',
    'kind: SourceVerification',
    'metadata:',
    '  name: app',
    'spec:',
    `  repoURL: ${appRepo.url}`,
    '  mode: head',
    '  allowedSigners: |',
    `    ${allowedSigners}`,
    '',
  ].join('\n');

const repoId = async () =>
  (await call<{ id: string; url: string }[]>('GET', '/api/v1/repositories')).body.find(
    (r) => r.url === appRepo.url,
  )?.id;
const verification = async () =>
  (await call<VerificationView>('GET', `/api/v1/repositories/${await repoId()}/verification`)).body;
const fleetStatus = async () =>
  (
    await call<
      {
        status: string;
        appliedCommit: string | null;
        error: { errors?: { file: string; path: string; message: string }[] } | null;
      }[]
    >('GET', '/api/v1/fleet-sources')
  ).body[0]!;

describe('SourceVerification declared in the fleet repository', () => {
  beforeAll(async () => {
    keys = mkdtempSync(join(tmpdir(), 'flotilla-fleet-keys-'));
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'alice', '-f', join(keys, 'alice')]);
    const [type, key] = readFileSync(join(keys, 'alice.pub'), 'utf8').split(' ');
    signer = `alice@example.com ${type} ${key}`;
    appRepo = createTestGitRepo({ 'app/cm.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n' });
    fleetRepo = createTestGitRepo({
      'fleet/sources.yaml': declaration(signer),
      // Another object, so that removing the declaration is not "every object deleted" (held).
      'fleet/projects.yaml': PROJECT,
    });
    hub = await startTestHub({ FLEET_REPOSITORIES: `${fleetRepo.url}#main:fleet` });
  }, 180_000);
  afterAll(async () => {
    await hub?.close();
    fleetRepo?.remove();
    appRepo?.remove();
    rmSync(keys, { recursive: true, force: true });
  }, 120_000);

  it('registers the repository and applies the mode and keys, managed by Git; the API refuses to change them', async () => {
    await expect
      .poll(async () => (await repoId()) !== undefined && (await verification()).mode, poll)
      .toBe('head');
    const v = await verification();
    expect(v).toMatchObject({ managedBy: 'git', setBy: 'git:Flotilla Test <test@flotilla.invalid>' });
    expect(v.fingerprints).toHaveLength(1);

    const edit = await call<{ code: string; message: string }>(
      'PUT',
      `/api/v1/repositories/${await repoId()}/verification`,
      { mode: 'none' },
    );
    expect(edit.status).toBe(409);
    expect(edit.body.code).toBe('managed-by-git');
    expect((await verification()).mode).toBe('head');
  });

  it('refuses a commit with a malformed allowed-signers line, naming file and field; nothing changes', async () => {
    const bad = fleetRepo.commit({
      'fleet/sources.yaml': declaration('bob@example.com ssh-ed25519 not*base64'),
    });
    await expect.poll(async () => (await fleetStatus()).status, poll).toBe('Error');
    const errors = (await fleetStatus()).error?.errors ?? [];
    expect(errors.map((e) => [e.file, e.path, e.message])).toEqual([
      ['fleet/sources.yaml', 'spec.allowedSigners', 'line 1: the key is not a base64 ssh-ed25519 public key'],
    ]);
    expect((await fleetStatus()).appliedCommit).not.toBe(bad);
    expect((await verification()).fingerprints).toHaveLength(1);
  });

  it('removing the declaration returns the repository to none and to the API; the history keeps both', async () => {
    const removed = fleetRepo.commit({ 'fleet/sources.yaml': null });
    await expect.poll(async () => (await fleetStatus()).appliedCommit, poll).toBe(removed);
    // Settings follow the commit's transaction (as windows do): the status may name it a moment earlier.
    await expect.poll(verification, poll).toMatchObject({ mode: 'none', managedBy: null });
    const history = await call<{ mode: string }[]>(
      'GET',
      `/api/v1/repositories/${await repoId()}/verification/history`,
    );
    expect(history.body.map((h) => h.mode)).toEqual(['none', 'head']);
  });
});
