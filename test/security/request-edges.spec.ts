import { createHmac } from 'node:crypto';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ReportBatchResponse } from '@flotilla/contract';
import { createTestGitRepo, waitForIdleQueues, type TestGitRepo, type TestHub } from '@flotilla/hub/testing';
import {
  ADMIN_TOKEN,
  caller,
  sql,
  startSecureHub,
  tableCounts,
  waitUntil,
  type Refusal,
} from './security-hub.js';

// The edge of the hub, where requests come in: who may make it read a body, how deep a body may
// nest, text PostgreSQL cannot store, what the request log may show and who may read the API's
// shape. Each attack is refused with a clear 4xx and changes nothing.

const WEBHOOK_SECRET = 'request-edges-webhook-secret';

/** Everything the hub writes to its request log, one JSON line each. */
const logLines: string[] = [];
const logStream = new Writable({
  write(chunk: Buffer, _encoding, done) {
    logLines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
    done();
  },
});

let hub: TestHub;
let repo: TestGitRepo;
let call: ReturnType<typeof caller>;
let viewerToken: string;
let agentCredential: string;
let targetId: string;

/** `depth` levels of arrays around a number: a few hundred kB that nest 100,000 deep. */
function deepJson(depth: number): string {
  return `${'['.repeat(depth)}1${']'.repeat(depth)}`;
}

function appSet(name: string) {
  return {
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'ApplicationSet',
    metadata: { name },
    spec: {
      generators: [{ list: { elements: [{ cluster: 'eu1' }] } }],
      template: {
        metadata: { name: `${name}-{{cluster}}` },
        spec: {
          source: { repoURL: repo.url, targetRevision: 'HEAD', path: 'app' },
          destination: { name: '{{cluster}}', namespace: 'web' },
        },
      },
    },
  };
}

describe('the edge: bodies, nesting, text, logs, OpenAPI', () => {
  beforeAll(async () => {
    repo = createTestGitRepo({
      'app/config.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  a: b\n',
    });
    hub = await startSecureHub({ FLOTILLA_WEBHOOK_SECRET: WEBHOOK_SECRET, LOG_LEVEL: 'info' }, { logStream });
    call = caller(hub);
    const cluster = await call<{ bootstrapToken: string }>('POST', '/api/v1/clusters', {
      body: { name: 'eu1' },
    });
    expect(cluster.status).toBe(201);
    const registered = await call<{ credential: string }>('POST', '/api/agent/v1/register', {
      body: { clusterName: 'eu1', bootstrapToken: cluster.body.bootstrapToken },
      token: null,
    });
    agentCredential = registered.body.credential;
    const viewer = await call<{ secret: string }>('POST', '/api/v1/tokens', {
      body: { name: 'ci', role: 'viewer' },
    });
    expect(viewer.status).toBe(201);
    viewerToken = viewer.body.secret;
    expect((await call('POST', '/api/v1/appsets', { body: appSet('web') })).status).toBe(201);
    await waitUntil(
      'target web-eu1',
      async () => await sql(hub, `SELECT id FROM "Target" WHERE name = 'web-eu1'`),
      (rows) => rows.length === 1,
    );
    targetId = (await sql(hub, `SELECT id FROM "Target" WHERE name = 'web-eu1'`))[0]!['id'] as string;
    await waitForIdleQueues(hub.app);
  }, 180_000);

  afterAll(async () => {
    await hub?.close();
    repo?.remove();
  }, 60_000);

  it('authenticates before reading a body: anonymous large bodies get 401, never a JSON error', async () => {
    const before = await tableCounts(hub);
    const big = `{"reports":[${'{"x":1},'.repeat(9 * 131_072)}{}]}`; // about 9 MiB, and not a batch
    for (const [path, token] of [
      ['/api/agent/v1/reports', null],
      ['/api/agent/v1/reports', 'fla_forged'],
      ['/api/v1/appsets', null],
      ['/api/v1/appsets', viewerToken], // a viewer may not create: 403 before anything is read
    ] as const) {
      const r = await call<Refusal>('POST', path, { rawBody: big, token });
      expect(r.status, `${path} as ${token ?? 'anonymous'}`).toBe(token === viewerToken ? 403 : 401);
      expect(r.body.code).toMatch(/^(unauthorized|forbidden|credential-unknown)$/);
    }
    expect(await tableCounts(hub)).toEqual(before);
    // An agent that is who it says gets its body read, and judged.
    const r = await call<Refusal>('POST', '/api/agent/v1/reports', {
      rawBody: '{"reports":[{"x":1}]}',
      token: agentCredential,
    });
    expect(r.status).toBe(400);
    // Typed, so the agent sets the report aside rather than sending it again forever.
    expect(r.body.code).toBe('reports-invalid');
    expect(r.body.path).toBe('reports[0].type');
  });

  it('refuses JSON nested 100,000 deep with a 400 before parsing it, on create and on the viewer preview', async () => {
    const before = await tableCounts(hub);
    const body = `{"apiVersion":"argoproj.io/v1alpha1","kind":"ApplicationSet","metadata":{"name":"deep"},"spec":${deepJson(100_000)}}`;
    for (const [path, token] of [
      ['/api/v1/appsets', ADMIN_TOKEN],
      ['/api/v1/appsets/preview', viewerToken],
      ['/api/v1/clusters', ADMIN_TOKEN],
    ] as const) {
      const r = await call<Refusal>('POST', path, { rawBody: body, token });
      expect(r.status, path).toBe(400);
      expect(r.body).toEqual({
        code: 'invalid-request',
        message: 'a request body nests deeper than 128 levels of objects and arrays',
        requestId: expect.stringMatching(/^\S+$/) as string,
      });
    }
    // Brackets inside strings are text, not nesting.
    const text = await call('POST', '/api/v1/appsets/preview', {
      body: { ...appSet('brackets'), metadata: { name: 'brackets', annotations: { a: '['.repeat(500) } } },
      token: viewerToken,
    });
    expect(text.status).toBe(200);
    expect(await tableCounts(hub)).toEqual(before);
  });

  it('answers 400 naming the field for NUL and lone surrogates in bodies, path parameters and queries', async () => {
    const before = await tableCounts(hub);
    const nul = '\u0000';
    const cases: { what: string; method: string; path: string; rawBody?: string; at: string }[] = [
      {
        what: 'cluster name',
        method: 'POST',
        path: '/api/v1/clusters',
        rawBody: '{"name":"eu\\u0000x"}',
        at: 'name',
      },
      {
        what: 'label',
        method: 'POST',
        path: '/api/v1/clusters',
        rawBody: '{"name":"x1","labels":{"team":"a\\ud800"}}',
        at: 'labels.team',
      },
      {
        what: 'annotation key',
        method: 'POST',
        path: '/api/v1/clusters',
        rawBody: '{"name":"x1","annotations":{"a\\u0000":"v"}}',
        at: 'annotations.a\uFFFD',
      },
      {
        what: 'server',
        method: 'POST',
        path: '/api/v1/clusters',
        rawBody: '{"name":"x1","server":"https://\\udc00"}',
        at: 'server',
      },
      {
        what: 'template annotation',
        method: 'POST',
        path: '/api/v1/appsets',
        rawBody: JSON.stringify({
          ...appSet('x'),
          spec: {
            ...appSet('x').spec,
            template: {
              ...appSet('x').spec.template,
              metadata: { name: 'x', annotations: { a: `b${nul}` } },
            },
          },
        }),
        at: 'spec.template.metadata.annotations.a',
      },
      {
        what: 'break-glass reason',
        method: 'POST',
        path: '/api/v1/break-glass',
        rawBody: JSON.stringify({
          scope: 'cluster',
          name: 'eu1',
          reason: `incident${nul}`,
          durationMinutes: 5,
          pauseSelfHeal: true,
        }),
        at: 'reason',
      },
      { what: 'cluster in a path', method: 'GET', path: '/api/v1/clusters/%00', at: 'name' },
      { what: 'appset in a path', method: 'DELETE', path: '/api/v1/appsets/web%00', at: 'name' },
      { what: 'repository in a path', method: 'POST', path: '/api/v1/repositories/%00/refresh', at: 'id' },
      { what: 'query filter', method: 'GET', path: '/api/v1/targets?cluster=eu1%00', at: 'cluster' },
      { what: 'audit filter', method: 'GET', path: '/api/v1/audit?actor=%00', at: 'actor' },
    ];
    for (const c of cases) {
      const r = await call<Refusal>(c.method, c.path, c.rawBody !== undefined ? { rawBody: c.rawBody } : {});
      expect(r.status, c.what).toBe(400);
      expect(r.body.code, c.what).toBe('invalid-text');
      expect(r.body.path, c.what).toBe(c.at);
      expect(r.body.message, c.what).toMatch(
        /contains a (NUL character|lone surrogate), which cannot be stored/,
      );
    }
    // A lone surrogate sent as raw UTF-8 bytes of a surrogate (%ED%A0%80) is not even UTF-8.
    const bytes = await call<Refusal>('GET', '/api/v1/clusters/%ED%A0%80');
    expect(bytes.status).toBe(400);
    expect(await tableCounts(hub)).toEqual(before);
  });

  it("refuses an agent's one report with unstorable text and keeps the rest of its batch, audited", async () => {
    const before = await tableCounts(hub);
    const at = new Date().toISOString();
    const health = (id: string, message: string) => ({
      type: 'health',
      id,
      targetId,
      at,
      status: 'Healthy',
      message,
    });
    const r = await call<ReportBatchResponse>('POST', '/api/agent/v1/reports', {
      token: agentCredential,
      rawBody: JSON.stringify({
        reports: [
          health('fine-1', 'all good'),
          health('bad-1', 'pod says \u0000'),
          health('fine-2', 'still good'),
        ],
      }),
    });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      accepted: 2,
      duplicates: 0,
      refused: [
        {
          index: 1,
          id: 'bad-1',
          code: 'invalid-text',
          message:
            'report 1 refused: reports[1].message: contains a NUL character, which cannot be stored; send valid Unicode text without U+0000',
        },
      ],
    });
    const after = await tableCounts(hub);
    expect(after['ProcessedReport']).toBe(before['ProcessedReport']! + 2);
    expect(await sql(hub, `SELECT id FROM "ProcessedReport" WHERE id LIKE 'bad-%'`)).toEqual([]);
    expect(
      await sql(
        hub,
        `SELECT actor, scope, details->>'reportId' AS "reportId" FROM "AuditEvent" WHERE action = 'agent.report-refused'`,
      ),
    ).toEqual([{ actor: 'agent:eu1', scope: 'cluster:eu1', reportId: 'bad-1' }]);
    expect((await sql(hub, `SELECT health FROM "Target" WHERE id = $1`, [targetId]))[0]).toEqual({
      health: 'Healthy',
    });
  });

  it('never writes a credential into the request log, whichever header carries it', async () => {
    const agentSecret = agentCredential;
    const body = JSON.stringify({ ref: 'refs/heads/main', repository: { clone_url: repo.url } });
    const signature = `sha256=${createHmac('sha256', WEBHOOK_SECRET).update(body).digest('hex')}`;
    const cookie = 'session=cookie-secret-value-0123456789';
    logLines.length = 0;
    await call('GET', '/api/v1/clusters', {
      headers: { cookie, 'proxy-authorization': `Basic ${btoa('u:proxy-secret')}` },
    });
    await call('GET', '/api/v1/clusters', { token: viewerToken });
    await call('GET', '/api/agent/v1/assignments?wait=0', { token: agentSecret });
    await call('POST', '/api/v1/webhooks/git', {
      rawBody: body,
      token: null,
      headers: { 'x-gitlab-token': WEBHOOK_SECRET, 'x-gitlab-event': 'Push Hook' },
    });
    for (const header of [
      'x-hub-signature-256',
      'x-hub-signature',
      'x-gitea-signature',
      'x-gogs-signature',
    ]) {
      await call('POST', '/api/v1/webhooks/git', {
        rawBody: body,
        token: null,
        headers: { [header]: signature, 'x-github-event': 'push' },
      });
    }
    await waitUntil(
      'the request log lines',
      () => Promise.resolve(logLines.filter((l) => l.includes('"req"')).length),
      (n) => n >= 8,
    );
    const log = logLines.join('\n');
    for (const secret of [
      ADMIN_TOKEN,
      viewerToken,
      agentSecret,
      WEBHOOK_SECRET,
      signature.slice('sha256='.length),
      'cookie-secret-value-0123456789',
      btoa('u:proxy-secret'),
    ]) {
      expect(log.includes(secret), `the log shows ${secret.slice(0, 6)}…`).toBe(false);
    }
    // The headers are logged, as redacted: an operator sees they were sent.
    expect(log).toContain('"x-gitlab-token":"[redacted]"');
    expect(log).toContain('"authorization":"[redacted]"');
  });

  it('serves the OpenAPI document to people with a credential only, as docs/security.md says', async () => {
    const anonymous = await call<Refusal>('GET', '/api/docs-json', { token: null });
    expect(anonymous.status).toBe(401);
    expect((await call('GET', '/api/docs', { token: null })).status).toBe(404);
    const viewer = await call<{ openapi: string; paths: Record<string, unknown> }>('GET', '/api/docs-json', {
      token: viewerToken,
    });
    expect(viewer.status).toBe(200);
    expect(Object.keys(viewer.body.paths)).toContain('/api/v1/clusters');
    // What stays public: health, readiness and metrics.
    for (const path of ['/healthz', '/readyz', '/metrics']) {
      expect((await call('GET', path, { token: null })).status, path).toBe(200);
    }
  });
});
