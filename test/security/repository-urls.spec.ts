import { existsSync, mkdtempSync, realpathSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestGitRepo, waitForIdleQueues, type TestGitRepo, type TestHub } from '@flotilla/hub/testing';
import { caller, sql, startSecureHub, tableCounts, waitUntil, type Refusal } from './security-hub.js';

// Every way a repository URL enters the hub — POST /repositories, an appset's repoURL written or
// generated, the viewer's preview — meets one check: no git transport helpers (ext:: runs a
// command), no options (--upload-pack=…), no plain paths, no credentials in the URL, and local
// repositories only under the directories the operator allows, never the hub's own mirrors.

let hub: TestHub;
let repo: TestGitRepo;
let call: ReturnType<typeof caller>;
let viewerToken: string;
let scratch: string;
let mirrorUrl: string;
/** A file an ext:: or --upload-pack command would create if git ever ran it. */
let marker: string;

function appSet(name: string, repoURL: string, elements: Record<string, string>[] = [{ cluster: 'eu1' }]) {
  return {
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'ApplicationSet',
    metadata: { name },
    spec: {
      generators: [{ list: { elements } }],
      template: {
        metadata: { name: `${name}-{{cluster}}` },
        spec: {
          source: { repoURL, targetRevision: 'HEAD', path: 'app' },
          destination: { name: '{{cluster}}', namespace: 'web' },
        },
      },
    },
  };
}

describe('repository URLs', () => {
  beforeAll(async () => {
    repo = createTestGitRepo({
      'app/config.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  a: b\n',
    });
    scratch = mkdtempSync(join(tmpdir(), 'flotilla-urls-'));
    marker = join(scratch, 'pwned');
    // Local repositories are allowed under the temporary directory, where the test repositories are
    // (and where the hub's data dir is too: the mirrors stay refused all the same).
    hub = await startSecureHub({ FLOTILLA_LOCAL_REPOSITORIES: realpathSync(tmpdir()) });
    call = caller(hub);
    expect((await call('POST', '/api/v1/clusters', { body: { name: 'eu1' } })).status).toBe(201);
    const viewer = await call<{ secret: string }>('POST', '/api/v1/tokens', {
      body: { name: 'ci', role: 'viewer' },
    });
    viewerToken = viewer.body.secret;
    const registered = await call<{ id: string }>('POST', '/api/v1/repositories', {
      body: { url: repo.url },
    });
    expect(registered.status).toBe(201);
    await waitUntil(
      'the repository to be fetched',
      async () =>
        (await call<{ status: string }>('GET', `/api/v1/repositories/${registered.body.id}`)).body.status,
      (s) => s === 'Ready',
    );
    mirrorUrl = `file://${realpathSync(hub.config.dataDir)}/repos/${registered.body.id}.git`;
    await waitForIdleQueues(hub.app);
  }, 180_000);

  afterAll(async () => {
    await hub?.close();
    repo?.remove();
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  }, 60_000);

  const hostile = () => {
    const link = join(scratch, 'innocent-looking');
    if (!existsSync(link)) symlinkSync(join(hub.config.dataDir, 'repos'), link);
    return [
      ['a transport helper', `ext::sh -c touch% ${marker}`, /transport helper/],
      ['the fd helper', 'fd::17', /transport helper/],
      ['an option', `--upload-pack=touch ${marker}`, /must not start with "-"/],
      ['an absolute plain path', '/etc', /is not a Git URL/],
      ['a relative plain path', '../../secrets', /is not a Git URL/],
      ["the hub's own mirror", mirrorUrl, /inside the hub's data directory/],
      ['a link into the mirrors', `file://${link}/x.git`, /inside the hub's data directory/],
      [
        'a local directory not allowed',
        'file:///etc',
        /outside the directories FLOTILLA_LOCAL_REPOSITORIES allows/,
      ],
      ['a password', 'https://alice:s3cret-pass@git.example.com/org/repo.git', /must not carry credentials/],
      [
        'a token as user',
        'https://ghp_token1234567890@git.example.com/org/repo.git',
        /must not carry credentials/,
      ],
      ['an ssh password', 'ssh://git:s3cret-pass@git.example.com/org/repo.git', /must not carry a password/],
      ['another scheme', 'ftp://git.example.com/repo.git', /scheme ftp:\/\//],
    ] as const;
  };

  it('refuses every hostile URL on POST /repositories, naming why, echoing no secret, changing nothing', async () => {
    const before = await tableCounts(hub);
    for (const [what, url, why] of hostile()) {
      const r = await call<Refusal>('POST', '/api/v1/repositories', { body: { url } });
      expect(r.status, what).toBe(400);
      expect(r.body.code, what).toBe('invalid-repository-url');
      expect(r.body.path, what).toBe('url');
      expect(r.body.message, what).toMatch(why);
      expect(JSON.stringify(r.body), what).not.toMatch(/s3cret-pass|ghp_token/);
    }
    expect(await tableCounts(hub)).toEqual(before);
    expect(existsSync(marker)).toBe(false);
    // Ordinary URLs still pass the check (they are registered; fetching them is another matter).
    for (const url of ['https://git.example.com/org/repo.git', 'git@git.example.com:org/repo.git']) {
      expect((await call('POST', '/api/v1/repositories', { body: { url } })).status, url).toBe(201);
    }
    await sql(hub, `DELETE FROM "Repository" WHERE url LIKE '%git.example.com%'`);
  });

  it("refuses the same URLs in an appset's repoURL, on create and on the viewer's preview", async () => {
    const before = await tableCounts(hub);
    for (const [what, url, why] of hostile()) {
      for (const [path, token] of [
        ['/api/v1/appsets', undefined],
        ['/api/v1/appsets/preview', viewerToken],
      ] as const) {
        const r = await call<Refusal>('POST', path, { body: appSet('sneaky', url), token });
        expect(r.status, `${what} via ${path}`).toBe(400);
        expect(r.body.code, what).toBe('invalid-repository-url');
        expect(r.body.path, what).toBe('spec.template.spec.source.repoURL');
        expect(r.body.message, what).toMatch(why);
      }
    }
    expect(await tableCounts(hub)).toEqual(before);
    expect(existsSync(marker)).toBe(false);
  });

  /** The appset with `spec.sources`: the app's directory and a `ref:` source at `refURL`. */
  function multiSource(
    name: string,
    refURL: string,
    elements: Record<string, string>[] = [{ cluster: 'eu1' }],
  ) {
    const doc = appSet(name, repo.url, elements);
    const spec = doc.spec.template.spec as Record<string, unknown>;
    delete spec['source'];
    spec['sources'] = [
      { repoURL: repo.url, targetRevision: 'HEAD', path: 'app' },
      { repoURL: refURL, targetRevision: 'HEAD', ref: 'values' },
    ];
    return doc;
  }

  it('refuses them as any source of a multi-source appset, a ref: source too, naming which', async () => {
    const before = await tableCounts(hub);
    for (const [what, url, why] of hostile()) {
      const r = await call<Refusal>('POST', '/api/v1/appsets', { body: multiSource('sneaky-sources', url) });
      expect(r.status, what).toBe(400);
      expect(r.body.code, what).toBe('invalid-repository-url');
      expect(r.body.path, what).toBe('spec.template.spec.sources[1].repoURL');
      expect(r.body.message, what).toMatch(why);
    }
    expect(await tableCounts(hub)).toEqual(before);
    expect(existsSync(marker)).toBe(false);
  });

  it('refuses a ref: source URL a generator makes at expansion, registering and fetching nothing', async () => {
    const r = await call('POST', '/api/v1/appsets', {
      body: multiSource('generated-ref', '{{url}}', [{ cluster: 'eu1', url: mirrorUrl }]),
    });
    expect(r.status).toBe(201);
    await expect
      .poll(
        async () => (await call<{ status: string }>('GET', '/api/v1/appsets/generated-ref')).body.status,
        {
          timeout: 60_000,
        },
      )
      .toBe('Error');
    const { error } = (await call<{ error: Refusal }>('GET', '/api/v1/appsets/generated-ref')).body;
    expect(error.code).toBe('invalid-repository-url');
    expect(error.message).toMatch(/inside the hub's data directory/);
    expect(
      await sql(hub, `SELECT count(*)::int AS n FROM "Target" WHERE name LIKE 'generated-ref-%'`),
    ).toEqual([{ n: 0 }]);
    expect(await sql(hub, `SELECT count(*)::int AS n FROM "Repository" WHERE url LIKE '%/repos/%'`)).toEqual([
      { n: 0 },
    ]);
    await call('DELETE', '/api/v1/appsets/generated-ref');
    await waitForIdleQueues(hub.app);
  });

  it('refuses a URL a generator makes, on the appset, registering and fetching nothing', async () => {
    const before = await tableCounts(hub);
    const r = await call('POST', '/api/v1/appsets', {
      body: appSet('generated', '{{url}}', [{ cluster: 'eu1', url: mirrorUrl }]),
    });
    expect(r.status).toBe(201);
    await expect
      .poll(async () => (await call<{ status: string }>('GET', '/api/v1/appsets/generated')).body.status, {
        timeout: 60_000,
      })
      .toBe('Error');
    const { error } = (await call<{ error: Refusal }>('GET', '/api/v1/appsets/generated')).body;
    expect(error.code).toBe('invalid-repository-url');
    expect(error.message).toMatch(/inside the hub's data directory/);
    await waitForIdleQueues(hub.app);
    const after = await tableCounts(hub);
    // The appset and its audit event are all that changed: no repository, no target, no bundle.
    expect(after).toEqual({
      ...before,
      ApplicationSet: before['ApplicationSet']! + 1,
      AuditEvent: after['AuditEvent'],
    });
    expect(
      await sql(hub, `SELECT action FROM "AuditEvent" WHERE scope = 'appset:generated' ORDER BY id LIMIT 1`),
    ).toEqual([{ action: 'appset.created' }]);
  });

  it('refuses to fetch a stored repository whose URL the check refuses (rows from before it)', async () => {
    const id = '00000000-0000-4000-8000-000000000013';
    await sql(hub, `INSERT INTO "Repository" (id, url) VALUES ($1, $2)`, [id, mirrorUrl]);
    expect((await call('POST', `/api/v1/repositories/${id}/refresh`)).status).toBe(202);
    const fetched = await waitUntil(
      'the refused fetch',
      async () =>
        (await call<{ status: string; error: string | null }>('GET', `/api/v1/repositories/${id}`)).body,
      (r) => r.status === 'Error',
    );
    expect(fetched.error).toMatch(/^refused to fetch: the repository URL is inside the hub's data directory/);
    expect(existsSync(join(hub.config.dataDir, 'repos', `${id}.git`))).toBe(false);
    const audit = await sql(
      hub,
      `SELECT actor, details->>'error' AS error FROM "AuditEvent" WHERE action = 'repository.fetch-failed' AND scope = $1`,
      [`repository:${mirrorUrl}`],
    );
    expect(audit).toEqual([{ actor: 'system:repository-poll', error: fetched.error }]);
  });
});
