import { createHmac } from 'node:crypto';
import { symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { generateX25519Identity, identityToRecipient } from 'age-encryption';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeObject } from '@flotilla/contract';
import { decryptSopsObject, encryptSopsObject, SopsError } from '@flotilla/sops';
import { createTestGitRepo, waitForIdleQueues, type TestGitRepo, type TestHub } from '@flotilla/hub/testing';
import { caller, sql, startSecureHub, tableCounts, waitUntil, type Refusal } from './security-hub.js';

// Hostile input at every door: a repository with an alias bomb or an escaping path, webhooks without
// or with a wrong signature, a SOPS file whose ciphertext was changed. Each is refused with an error
// naming what is wrong, and nothing the hub or a cluster holds changes.

const WEBHOOK_SECRET = 'security-suite-webhook-secret';
const CONFIGMAP = `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-config\ndata:\n  region: eu1\n`;

/** Ten levels of nine aliases each: 9^10 nodes if expanded. A few hundred bytes on disk. */
function aliasBomb(): string {
  const lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]'];
  for (let i = 1; i < 10; i++) {
    const prev = String.fromCharCode(96 + i);
    const cur = String.fromCharCode(97 + i);
    lines.push(`${cur}: &${cur} [${Array(9).fill(`*${prev}`).join(',')}]`);
  }
  return `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bomb\ndata:\n${lines.map((l) => `  ${l}`).join('\n')}\n`;
}

let hub: TestHub;
let repo: TestGitRepo;
let call: ReturnType<typeof caller>;

function appSet(name: string, path: string) {
  return {
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'ApplicationSet',
    metadata: { name },
    spec: {
      generators: [{ list: { elements: [{ cluster: 'eu1' }] } }],
      template: {
        metadata: { name: `${name}-{{cluster}}` },
        spec: {
          source: { repoURL: repo.url, targetRevision: 'HEAD', path },
          destination: { name: '{{cluster}}', namespace: 'web' },
        },
      },
    },
  };
}

async function appSetState(name: string) {
  return (await call<{ status: string; error: Refusal | null }>('GET', `/api/v1/appsets/${name}`)).body;
}

async function targetRow(name: string) {
  return (
    await sql(hub, 'SELECT "desiredRevision", "bundleDigest" FROM "Target" WHERE name = $1', [name])
  )[0];
}

async function refresh(): Promise<void> {
  const repos = await call<{ id: string; url: string }[]>('GET', '/api/v1/repositories');
  const mine = repos.body.find((r) => r.url === repo.url);
  expect((await call('POST', `/api/v1/repositories/${mine?.id}/refresh`)).status).toBe(202);
}

describe('hostile input', () => {
  beforeAll(async () => {
    repo = createTestGitRepo({ 'apps/web/config.yaml': CONFIGMAP, 'outside/secret.yaml': CONFIGMAP });
    hub = await startSecureHub({ FLOTILLA_WEBHOOK_SECRET: WEBHOOK_SECRET });
    call = caller(hub);
    expect((await call('POST', '/api/v1/clusters', { body: { name: 'eu1' } })).status).toBe(201);
    expect((await call('POST', '/api/v1/appsets', { body: appSet('web', 'apps/web') })).status).toBe(201);
    await waitUntil(
      'appset web to be Ready',
      async () => (await appSetState('web')).status,
      (s) => s === 'Ready',
    );
    await waitForIdleQueues(hub.app);
  }, 180_000);

  afterAll(async () => {
    await hub?.close();
    repo?.remove();
  }, 60_000);

  it('refuses a YAML alias bomb in a new commit, naming the file, and keeps the target as it was', async () => {
    const before = await targetRow('web-eu1');
    const bundles = (await tableCounts(hub))['Bundle'];
    repo.commit({ 'apps/web/bomb.yaml': aliasBomb() }, 'alias bomb');
    await refresh();
    await expect.poll(async () => (await appSetState('web')).status, { timeout: 60_000 }).toBe('Error');
    const { error } = await appSetState('web');
    expect(error?.message).toMatch(/bomb\.yaml/);
    expect(error?.message).toMatch(/alias/i);
    await waitForIdleQueues(hub.app);
    expect(await targetRow('web-eu1')).toEqual(before);
    expect((await tableCounts(hub))['Bundle']).toBe(bundles);
    repo.commit({ 'apps/web/bomb.yaml': null }, 'remove the bomb');
    await refresh();
    await expect.poll(async () => (await appSetState('web')).status, { timeout: 60_000 }).toBe('Ready');
  });

  it('refuses a source path that climbs out of the repository with "..", creating no target', async () => {
    const before = await tableCounts(hub);
    const r = await call('POST', '/api/v1/appsets', {
      body: appSet('escape', 'apps/../../outside'),
    });
    // Accepted as a document; its expansion renders nothing and records why on the appset.
    expect(r.status).toBe(201);
    await expect.poll(async () => (await appSetState('escape')).status, { timeout: 60_000 }).toBe('Error');
    expect((await appSetState('escape')).error).toEqual({
      code: 'manifest-unsafe-path',
      path: 'targets[0] (escape-eu1).spec.source.path: apps/../../outside',
      message:
        'apps/../../outside: the source path must stay inside the repository (no absolute path, no "..")',
    });
    expect(await sql(hub, `SELECT name FROM "Target" WHERE name LIKE 'escape-%'`)).toEqual([]);
    const after = await tableCounts(hub);
    expect([after['Target'], after['Bundle']]).toEqual([before['Target'], before['Bundle']]);
  });

  it('refuses a symlink that points outside the rendered path, and keeps the target as it was', async () => {
    const before = await targetRow('web-eu1');
    symlinkSync('/etc/passwd', join(repo.dir, 'apps/web/passwd.yaml'));
    execFileSync('git', ['-C', repo.dir, 'add', '-A']);
    execFileSync('git', [
      '-C',
      repo.dir,
      '-c',
      'user.name=t',
      '-c',
      'user.email=t@t',
      'commit',
      '-qm',
      'link out',
    ]);
    await refresh();
    await expect.poll(async () => (await appSetState('web')).status, { timeout: 60_000 }).toBe('Error');
    expect((await appSetState('web')).error?.message).toMatch(/passwd\.yaml/);
    await waitForIdleQueues(hub.app);
    expect(await targetRow('web-eu1')).toEqual(before);
  });

  it('refuses unsigned and wrongly signed webhooks with 401, fetching nothing', async () => {
    const body = JSON.stringify({
      ref: 'refs/heads/main',
      repository: { clone_url: repo.url, html_url: repo.url },
    });
    const wrong = `sha256=${createHmac('sha256', 'not-the-secret-at-all').update(body).digest('hex')}`;
    await waitForIdleQueues(hub.app);
    const before = await tableCounts(hub);
    const fetchedBefore = await sql(hub, 'SELECT "lastAttemptAt" FROM "Repository"');
    for (const signature of [undefined, wrong, 'sha256=00']) {
      const r = await call<Refusal>('POST', '/api/v1/webhooks/git', {
        rawBody: body,
        token: null,
        headers: {
          'x-github-event': 'push',
          'x-github-delivery': 'd-1',
          ...(signature !== undefined && { 'x-hub-signature-256': signature }),
        },
      });
      expect(r.status, String(signature)).toBe(401);
      expect(r.body.message).toMatch(/signature|X-Hub-Signature-256/i);
    }
    await waitForIdleQueues(hub.app);
    expect(await tableCounts(hub)).toEqual(before);
    expect(await sql(hub, 'SELECT "lastAttemptAt" FROM "Repository"')).toEqual(fetchedBefore);
  });

  it('refuses a SOPS file with a tampered value (MAC failure), naming the value, and yields no plaintext', async () => {
    const identity = await generateX25519Identity();
    const secret: KubeObject = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'db', namespace: 'shop' },
      stringData: { password: 'correct-horse-battery-staple' },
    };
    const encrypted = (await encryptSopsObject(secret, {
      recipients: [await identityToRecipient(identity)],
      encryptedRegex: '^(data|stringData)$',
    })) as KubeObject & { stringData: Record<string, string> };
    const tampered = structuredClone(encrypted);
    tampered.stringData['password'] = tampered.stringData['password']!.replace(
      /data:(.)/,
      (_m, c: string) => `data:${c === 'A' ? 'B' : 'A'}`,
    );
    const snapshot = structuredClone(tampered);
    let error: unknown;
    try {
      await decryptSopsObject(tampered, { ageIdentities: [identity] });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(SopsError);
    expect((error as SopsError).code).toBe('mac-mismatch');
    expect((error as SopsError).message).not.toContain('correct-horse');
    expect(tampered).toEqual(snapshot); // the input is left as it was
    // The untampered file still decrypts with the same key: the refusal is the tampering's.
    const ok = (await decryptSopsObject(encrypted, { ageIdentities: [identity] })) as typeof encrypted;
    expect(ok.stringData['password']).toBe('correct-horse-battery-staple');
  });

  // An ApplicationSet reaching outside its project: test/security/project-boundaries.spec.ts.
});
