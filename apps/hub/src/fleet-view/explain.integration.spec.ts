import 'reflect-metadata';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ExplainView } from '@flotilla/contract';
import { Database } from '../db/database.js';
import {
  createTestGitRepo,
  startTestHub,
  type TestGitRepo,
  type TestHub,
  hubCaller,
} from '../testing/index.js';

// GET /api/v1/explain on the real hub (PostgreSQL, Redis, a Git repository with a kustomization):
// a matching cluster gets the generator, values, resolved revision, bundle digest and render check;
// a cluster outside the selector gets the failing requirement; bad queries change nothing.

let hub: TestHub;
let repo: TestGitRepo;
let head: string;

const call = hubCaller(() => hub);

const appSetDoc = () => ({
  apiVersion: 'argoproj.io/v1alpha1',
  kind: 'ApplicationSet',
  metadata: { name: 'web' },
  spec: {
    generators: [
      {
        clusters: {
          selector: {
            matchLabels: { env: 'prod' },
            matchExpressions: [{ key: 'region', operator: 'In', values: ['eu', 'us'] }],
          },
          values: { prefix: 'edge-' },
        },
      },
    ],
    template: {
      metadata: { name: 'web-{{name}}' },
      spec: {
        source: {
          repoURL: repo.url,
          targetRevision: 'main',
          path: 'web',
          kustomize: { namePrefix: '{{values.prefix}}' },
        },
        destination: { name: '{{name}}', namespace: 'web' },
      },
    },
  },
});

beforeAll(async () => {
  repo = createTestGitRepo({
    'web/kustomization.yaml': 'resources:\n  - cm.yaml\n',
    'web/cm.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  a: "1"\n',
    'broken/kustomization.yaml': 'resources:\n  - missing.yaml\n',
  });
  head = repo.head();
  hub = await startTestHub();
  for (const [name, labels] of [
    ['eu1', { env: 'prod', region: 'eu' }],
    ['ap1', { env: 'prod', region: 'ap' }],
    ['dev1', { env: 'dev' }],
  ] as const) {
    expect((await call('POST', '/api/v1/clusters', { name, labels })).status).toBe(201);
  }
  expect([200, 201]).toContain((await call('POST', '/api/v1/appsets', appSetDoc())).status);
  // expect.poll is for tests; a bounded wait here.
  for (let i = 0; i < 600; i++) {
    const { body } = await call<{ status: string; error: unknown }>('GET', '/api/v1/appsets/web');
    if (body.status === 'Ready') return;
    if (body.status === 'Error') throw new Error(`appset failed: ${JSON.stringify(body.error)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('appset web did not become Ready within 60 s');
}, 90_000);

afterAll(async () => {
  await hub?.close();
  repo?.remove();
});

describe('GET /api/v1/explain', () => {
  it('a matching cluster: generator, selector, values, resolved revision, bundle and render check', async () => {
    const r = await call<ExplainView>('GET', '/api/v1/explain?cluster=eu1&appset=web');
    expect(r.status).toBe(200);
    const v = r.body;
    expect(v).toMatchObject({
      cluster: 'eu1',
      appSet: 'web',
      matched: true,
      appSetStatus: { status: 'Ready' },
    });
    expect(v.generators).toEqual([
      expect.objectContaining({
        index: 0,
        type: 'clusters',
        verdict: 'matched',
        selectors: [{ path: 'spec.generators[0].clusters.selector', matched: true, unmet: [] }],
        produced: 1,
        targets: ['web-eu1'],
      }),
    ]);
    const [t] = v.targets;
    expect(t).toMatchObject({
      name: 'web-eu1',
      generator: 'spec.generators[0]',
      params: { name: 'eu1', 'values.prefix': 'edge-' },
      source: { path: 'web', targetRevision: 'main', kustomize: { namePrefix: 'edge-' } },
      resolvedRevision: head,
      stored: { desiredRevision: head },
      render: { renderer: 'kustomize', deterministic: true },
      holds: [],
    });
    expect(t?.stored?.bundleDigest).toMatch(/^sha256:[0-9a-f]{64}$/);
    // The digest named is the bundle the target points at: the overlay's prefix is in it.
    const bundle = await hub.app
      .get(Database)
      .prisma.bundle.findUniqueOrThrow({ where: { digest: t?.stored?.bundleDigest ?? '' } });
    expect((bundle.manifests as { metadata: { name: string } }[])[0]?.metadata.name).toBe('edge-web');
  });

  it('a cluster outside the selector: the failing requirement, named', async () => {
    const v = (await call<ExplainView>('GET', '/api/v1/explain?cluster=ap1&appset=web')).body;
    expect(v.matched).toBe(false);
    expect(v.targets).toEqual([]);
    const [g] = v.generators;
    expect(g?.verdict).toBe('not-matched');
    expect(g?.selectors[0]?.unmet).toEqual([
      { field: 'matchExpressions[0]', requirement: 'region In (eu, us)', actual: 'region=ap' },
    ]);
    expect(g?.reasons[0]).toContain('region In (eu, us) (cluster has region=ap)');

    const dev = (await call<ExplainView>('GET', '/api/v1/explain?cluster=dev1&appset=web')).body;
    expect(dev.generators[0]?.selectors[0]?.unmet.map((u) => u.requirement)).toEqual([
      'env=prod',
      'region In (eu, us)',
    ]);
  });

  it("a held expansion: the submitted document's verdict, and the guard named on the target it keeps", async () => {
    // A selector no cluster matches would delete every target: the deletion guard holds it.
    const doc = appSetDoc();
    doc.spec.generators[0]!.clusters.selector.matchLabels = { env: 'nowhere' };
    expect([200, 201]).toContain((await call('POST', '/api/v1/appsets', doc)).status);
    await expect
      .poll(async () => (await call<{ status: string }>('GET', '/api/v1/appsets/web')).body.status, {
        timeout: 60_000,
      })
      .toBe('Held');
    const v = (await call<ExplainView>('GET', '/api/v1/explain?cluster=eu1&appset=web')).body;
    // Explain answers for the document as submitted: eu1 no longer matches, and the guard holds it.
    expect(v.matched).toBe(false);
    expect(v.appSetStatus.status).toBe('Held');
    expect(v.generators[0]?.reasons[0]).toContain('env=nowhere (cluster has env=prod)');
    // The target it had stays, and the deletion guard is named as what keeps it.
    expect(v.targets).toHaveLength(1);
    expect(v.targets[0]).toMatchObject({
      name: 'web-eu1',
      generator: '(none: kept from the last applied expansion)',
      stored: { desiredRevision: head },
      holds: [{ kind: 'deletion-guard' }],
    });
  });

  it("an appset whose kustomization fails shows kustomize's stderr as its error, and explain names it", async () => {
    const doc = appSetDoc();
    doc.metadata.name = 'broken';
    doc.spec.template.metadata.name = 'broken-{{name}}';
    doc.spec.template.spec.source.path = 'broken';
    expect([200, 201]).toContain((await call('POST', '/api/v1/appsets', doc)).status);
    let appSet = { status: 'Pending', error: null as { code: string; message: string } | null };
    await expect
      .poll(
        async () => {
          appSet = (await call<typeof appSet>('GET', '/api/v1/appsets/broken')).body;
          return appSet.status;
        },
        { timeout: 60_000 },
      )
      .toBe('Error');
    expect(appSet.error?.code).toBe('kustomize-failed');
    expect(appSet.error?.message).toContain("accumulating resources from 'missing.yaml'");
    const v = (await call<ExplainView>('GET', '/api/v1/explain?cluster=eu1&appset=broken')).body;
    expect(v.targets[0]?.stored).toBeNull();
    expect(v.targets[0]?.holds.map((h) => h.kind)).toEqual(['appset-error', 'not-expanded']);
    expect(v.targets[0]?.holds[0]?.message).toContain('missing.yaml');
  });

  it.each([
    ['/api/v1/explain?appset=web', 400, 'cluster'],
    ['/api/v1/explain?cluster=eu1', 400, 'appset'],
    ['/api/v1/explain?cluster=nope&appset=web', 404, undefined],
    ['/api/v1/explain?cluster=eu1&appset=nope', 404, undefined],
  ])('%s → %i', async (path, status, field) => {
    const r = await call<{ code: string; path?: string }>('GET', path);
    expect(r.status).toBe(status);
    if (field) expect(r.body.path).toBe(field);
  });
});
