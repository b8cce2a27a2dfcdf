import 'reflect-metadata';
import { execFile, execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Database } from '../../db/database.js';
import { startTwoClusterFleet, type TwoClusterFleet } from '../../testing/two-cluster-fleet.js';

const CLI = fileURLToPath(new URL('../../../../cli/dist/main.js', import.meta.url));
const poll = { timeout: 60_000, interval: 200 };

interface TargetRow {
  name: string;
  desiredRevision: string;
  releasedRevision: string | null;
  reason: { code: string; message: string } | null;
}

/**
 * Verified sources end to end on the real hub (PostgreSQL, Redis, Git, ssh-keygen): SSH keys made in
 * the test sign real commits; the `web` appset (targets web-eu-1, web-us-1) reads the repository.
 */
describe('verified sources: a revision is released only when signed as its repository requires', () => {
  let fleet: TwoClusterFleet;
  let keys: string;
  let repoId: string;
  const signers: Record<'alice' | 'bob', string> = { alice: '', bob: '' };
  let gpgKeyring = '';
  let gpgFingerprint = '';

  const git = (...args: string[]) =>
    execFileSync(
      'git',
      ['-C', fleet.repo.dir, '-c', 'user.name=Test', '-c', 'user.email=t@x.invalid', ...args],
      {
        encoding: 'utf8',
      },
    ).trim();

  /** A commit changing app/config.yaml, signed with `by`'s SSH key (or unsigned); its sha. */
  const commit = (note: string, by?: 'alice' | 'bob' | 'carol-gpg'): string => {
    writeFileSync(
      join(fleet.repo.dir, 'app/config.yaml'),
      `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-config\ndata:\n  note: ${note}\n`,
    );
    git('add', '-A');
    const sign =
      by === 'carol-gpg'
        ? ['-c', `user.signingkey=${gpgFingerprint}`]
        : by
          ? ['-c', 'gpg.format=ssh', '-c', `user.signingkey=${join(keys, by)}`]
          : [];
    execFileSync(
      'git',
      [
        '-C',
        fleet.repo.dir,
        '-c',
        'user.name=Test',
        '-c',
        'user.email=t@x.invalid',
        ...sign,
        'commit',
        '-q',
        ...(by ? ['-S'] : []),
        '-m',
        note,
      ],
      { env: { ...process.env, GNUPGHOME: join(keys, 'gnupg') } },
    );
    return fleet.repo.head();
  };

  const targets = async () => (await fleet.call<TargetRow[]>('GET', '/api/v1/targets')).body;
  const target = async (name: string) => (await targets()).find((t) => t.name === name)!;
  const refresh = () => fleet.call('POST', `/api/v1/repositories/${repoId}/refresh`);
  const setVerification = (body: unknown) =>
    fleet.call<{ code?: string; path?: string; message: string; mode?: string; fingerprints?: string[] }>(
      'PUT',
      `/api/v1/repositories/${repoId}/verification`,
      body,
      'alice-admin',
    );
  const audited = async (action: string) =>
    (
      await fleet.call<{ items: { action: string; details: Record<string, unknown> }[] }>(
        'GET',
        `/api/v1/audit?action=${action}&limit=100`,
      )
    ).body.items;

  /** Both targets want (and the rollout released) `sha`. */
  const released = async (sha: string) => {
    await expect
      .poll(
        async () => (await targets()).filter((t) => t.name.startsWith('web-')).map((t) => t.desiredRevision),
        poll,
      )
      .toEqual([sha, sha]);
    await expect.poll(async () => (await target('web-eu-1')).releasedRevision, poll).toBe(sha);
  };

  /** The appset refused `failed` (SourceUnverified naming it and its signer) while `kept` stays released. */
  const refused = async (failed: string, signer: RegExp, kept: string) => {
    // Polled until this refusal shows: an earlier one has the same code.
    await expect
      .poll(async () => {
        const reason = (await target('web-eu-1')).reason;
        return (
          reason?.code === 'SourceUnverified' &&
          reason.message.includes(`commit ${failed.slice(0, 12)}:`) &&
          signer.test(reason.message)
        );
      }, poll)
      .toBe(true);
    const t = await target('web-eu-1');
    expect(t.desiredRevision).toBe(kept);
    expect(t.releasedRevision).toBe(kept);
  };

  beforeAll(async () => {
    keys = mkdtempSync(join(tmpdir(), 'flotilla-signing-'));
    fleet = await startTwoClusterFleet({ METRICS_REASONS_MAX_AGE_SECONDS: '0' });
    for (const who of ['alice', 'bob'] as const) {
      execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', who, '-f', join(keys, who)]);
      const [type, key] = readFileSync(join(keys, `${who}.pub`), 'utf8').split(' ');
      signers[who] = `${who}@example.com ${type} ${key}`;
    }
    // A GPG key (no passphrase) in its own GNUPGHOME, as a release manager's would be.
    const gpg = (...args: string[]) =>
      execFileSync('gpg', ['--batch', '--quiet', ...args], {
        env: { ...process.env, GNUPGHOME: join(keys, 'gnupg') },
        encoding: 'utf8',
      });
    mkdirSync(join(keys, 'gnupg'), { mode: 0o700 });
    gpg('--passphrase', '', '--quick-gen-key', 'Carol <carol@example.com>', 'ed25519', 'sign', 'never');
    gpgKeyring = gpg('--armor', '--export');
    gpgFingerprint = /^fpr:+([0-9A-F]{40}):/m.exec(gpg('--with-colons', '--list-keys'))![1]!;
    const repos = await fleet.call<{ id: string; url: string }[]>('GET', '/api/v1/repositories');
    repoId = repos.body.find((r) => r.url === fleet.repo.url)!.id;
  }, 180_000);
  afterAll(async () => {
    await fleet?.close();
    rmSync(keys, { recursive: true, force: true });
  }, 60_000);

  it('refuses bad settings naming the field, and changes nothing', async () => {
    await released(fleet.repo.head());
    const unknownMode = await setVerification({ mode: 'always', allowedSigners: signers.alice });
    expect(unknownMode.status).toBe(400);
    expect(unknownMode.body.path).toBe('mode');

    const badLine = await setVerification({
      mode: 'head',
      allowedSigners: `${signers.alice}\nbob@example.com ssh-ed25519 not-a-key`,
    });
    expect(badLine.status).toBe(400);
    expect(badLine.body).toMatchObject({ code: 'invalid-allowed-signers', path: 'allowedSigners' });
    expect(badLine.body.message).toMatch(
      /^allowedSigners line 2: the key is not a base64 ssh-ed25519 public key/,
    );

    const noKeys = await setVerification({ mode: 'strict' });
    expect(noKeys.status).toBe(400);
    expect(noKeys.body).toMatchObject({ code: 'no-allowed-keys', path: 'allowedSigners' });

    const badGpg = await setVerification({
      mode: 'head',
      gpgKeys: '-----BEGIN PGP PUBLIC KEY BLOCK-----\nnope\n',
    });
    expect(badGpg.status).toBe(400);
    expect(badGpg.body.path).toBe('gpgKeys');

    const now = await fleet.call<{ mode: string; allowedSigners: string }>(
      'GET',
      `/api/v1/repositories/${repoId}/verification`,
    );
    expect(now.body).toMatchObject({ mode: 'none', allowedSigners: '' });
    expect(
      (await fleet.call<unknown[]>('GET', `/api/v1/repositories/${repoId}/verification/history`)).body,
    ).toEqual([]);
  }, 120_000);

  it('head: the unsigned revision running now is refused, a signed one released, an unsigned one after it not', async () => {
    const unsignedStart = fleet.repo.head();
    const set = await setVerification({ mode: 'head', allowedSigners: signers.alice });
    expect(set.status).toBe(200);
    expect(set.body.fingerprints).toHaveLength(1);
    await refused(unsignedStart, /not signed \(signer: unsigned\)/, unsignedStart);

    const signed = commit('signed by alice', 'alice');
    await refresh();
    await released(signed);
    expect((await target('web-eu-1')).reason?.code).not.toBe('SourceUnverified');

    const unsigned = commit('unsigned');
    await refresh();
    await refused(unsigned, /signer: unsigned/, signed);

    // The three places a reason shows besides the API: the CLI, explain, the metric.
    const { stdout } = await promisify(execFile)(process.execPath, [CLI, 'targets'], {
      env: { ...process.env, ...fleet.cliEnv },
    });
    expect(stdout.split('\n').find((l) => l.includes('web-eu-1'))).toMatch(
      /SourceUnverified: source unverified/,
    );
    const explained = await fleet.call<{ appSetStatus: { error: { code: string } | null } }>(
      'GET',
      '/api/v1/explain?cluster=eu-1&appset=web',
    );
    expect(explained.body.appSetStatus.error?.code).toBe('source-unverified');
    const metrics = await fetch(`${fleet.hub.url}/metrics`).then((r) => r.text());
    expect(metrics).toMatch(/flotilla_targets_by_reason\{reason="SourceUnverified"\} 2/);

    // Audited once per commit, however many targets and expansions asked.
    await refresh();
    const events = (await audited('source.unverified')).filter((e) => e.details['commit'] === unsigned);
    expect(events).toHaveLength(1);
    expect(events[0]!.details).toMatchObject({
      repository: fleet.repo.url,
      signer: 'unsigned',
      mode: 'head',
    });
  }, 120_000);

  it('strict: a signed head over an unsigned middle commit is refused, naming the middle one', async () => {
    const lastReleased = (await target('web-eu-1')).releasedRevision!;
    const unsignedMiddle = fleet.repo.head();
    expect((await setVerification({ mode: 'strict', allowedSigners: signers.alice })).status).toBe(200);
    const signedHead = commit('signed over an unsigned one', 'alice');
    await refresh();
    await expect
      .poll(async () => (await target('web-eu-1')).reason?.message, poll)
      .toContain(`commit ${unsignedMiddle.slice(0, 12)}`);
    await refused(unsignedMiddle, new RegExp(`below ${signedHead.slice(0, 12)}`), lastReleased);

    // Under head, the same signed head is released.
    expect((await setVerification({ mode: 'head', allowedSigners: signers.alice })).status).toBe(200);
    await released(signedHead);
  }, 120_000);

  it('a key removed from the allowed signers stops the next release; the history keeps every version', async () => {
    const running = (await target('web-eu-1')).releasedRevision!;
    expect((await setVerification({ mode: 'head', allowedSigners: signers.bob })).status).toBe(200);
    // The revision running now was signed by alice, no longer allowed: nothing new is released.
    await refused(running, /not among the allowed signers \(signer: .*SHA256:/, running);
    const byAlice = commit('alice, after her key was removed', 'alice');
    await refresh();
    await refused(byAlice, /not among the allowed signers/, running);

    const byBob = commit('signed by bob', 'bob');
    await refresh();
    await released(byBob);

    const history = await fleet.call<{ mode: string; setBy: string; fingerprints: string[] }[]>(
      'GET',
      `/api/v1/repositories/${repoId}/verification/history`,
    );
    expect(history.body.map((h) => h.mode)).toEqual(['head', 'head', 'strict', 'head']);
    expect(history.body[0]!.setBy).toMatch(/alice-admin/);
    expect(history.body[0]!.fingerprints).not.toEqual(history.body[1]!.fingerprints);
    const cli = async (...args: string[]) =>
      (
        await promisify(execFile)(process.execPath, [CLI, ...args], {
          env: { ...process.env, ...fleet.cliEnv },
        })
      ).stdout;
    expect((await cli('repositories')).split('\n').find((l) => l.startsWith(fleet.repo.url))).toMatch(
      / head$/,
    );
    expect(await cli('repositories', 'verification', fleet.repo.url)).toContain(
      history.body[0]!.fingerprints[0],
    );
    expect(
      (await cli('repositories', 'verification-history', fleet.repo.url)).trim().split('\n'),
    ).toHaveLength(5);
    const changes = await audited('repository.verification-set');
    expect(changes[0]!.details).toMatchObject({
      mode: 'head',
      fingerprints: history.body[0]!.fingerprints,
      previous: { mode: 'head', fingerprints: history.body[1]!.fingerprints },
    });
  }, 120_000);

  it('GPG: a commit signed by a key of the allowed keyring is released; the SSH-signed one before it is not', async () => {
    const running = (await target('web-eu-1')).releasedRevision!;
    const set = await setVerification({ mode: 'head', gpgKeys: gpgKeyring });
    expect(set.status).toBe(200);
    expect(set.body.fingerprints).toEqual([gpgFingerprint]);
    await refused(running, /signer: /, running);
    const byCarol = commit('signed by carol with gpg', 'carol-gpg');
    await refresh();
    await released(byCarol);
  }, 120_000);

  it("a viewer's preview of an unsigned commit says it would be refused and records nothing; the expansion records it", async () => {
    const unsigned = commit('unsigned, never released');
    const byCarol = commit('signed by carol on top', 'carol-gpg');
    await refresh();
    await released(byCarol);
    // `unsigned` is in the mirror, and no expansion judged it: only the head is checked.
    const created = await fleet.call<{ secret: string }>('POST', '/api/v1/tokens', {
      name: 'preview-viewer',
      role: 'viewer',
    });
    expect(created.status).toBe(201);
    const doc = {
      apiVersion: 'flotilla.dev/v1alpha1',
      kind: 'ApplicationSet',
      metadata: { name: 'web-at-sha' },
      spec: {
        generators: [{ list: { elements: [{ cluster: 'eu-1' }] } }],
        template: {
          metadata: { name: 'web-at-sha-{{cluster}}' },
          spec: {
            source: { repoURL: fleet.repo.url, targetRevision: unsigned, path: 'app' },
            destination: { name: '{{cluster}}', namespace: 'web' },
          },
        },
      },
    };
    const preview = await fetch(`${fleet.hub.url}/api/v1/appsets/preview`, {
      method: 'POST',
      headers: { authorization: `Bearer ${created.body.secret}`, 'content-type': 'application/json' },
      body: JSON.stringify(doc),
    });
    expect(preview.status).toBe(422);
    const answer = (await preview.json()) as { code: string; message: string };
    expect(answer.code).toBe('source-unverified');
    expect(answer.message).toContain(`commit ${unsigned.slice(0, 12)}: not signed`);
    const verdictsOf = (sha: string) =>
      fleet.hub.app.get(Database).prisma.sourceVerification.count({ where: { commit: sha } });
    const eventsOf = async (sha: string) =>
      (await audited('source.unverified')).filter((e) => e.details['commit'] === sha);
    expect(await verdictsOf(unsigned)).toBe(0);
    expect(await eventsOf(unsigned)).toEqual([]);

    // The same document applied: its expansion judges the commit and records it, once.
    const applied = await fleet.call('POST', '/api/v1/appsets', doc, 'alice-admin');
    expect(applied.status).toBeLessThan(300);
    await expect.poll(() => verdictsOf(unsigned), poll).toBe(1);
    await expect.poll(async () => (await eventsOf(unsigned)).length, poll).toBe(1);
  }, 120_000);
});
