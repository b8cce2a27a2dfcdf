import 'reflect-metadata';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type {
  AssignmentsResponse,
  KubeObject,
  TargetListItemView,
  TargetSourceView,
} from '@flotilla/contract';
import { AppSetExpander } from '../desired-state/appset-expander.service.js';
import { Database } from '../db/database.js';
import { createTestGitRepo, type TestGitRepo } from '../testing/test-git-repo.js';
import {
  startTestHelmRepository,
  type TestChart,
  type TestHelmRepository,
} from '../testing/test-helm-repository.js';
import { startTwoClusterFleet, type TwoClusterFleet } from '../testing/two-cluster-fleet.js';

// Multi-source applications through the hub: a chart from a Helm repository on 127.0.0.1 with its
// value files in a second Git repository (a `ref:` source), on PostgreSQL, Redis, real Git and the
// real `helm template`.

let fleet: TwoClusterFleet;
let charts: TestHelmRepository;
let values: TestGitRepo;
let db: Database;
let expander: AppSetExpander;

const WEB: TestChart = {
  name: 'web',
  version: '1.0.0',
  files: {
    'values.yaml': 'greeting: chart-default\n',
    'templates/config.yaml':
      'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-config\ndata:\n  chart: {{ .Chart.Version | quote }}\n  greeting: {{ .Values.greeting | quote }}\n',
  },
};

function multiAppSet(name: string, sources: Record<string, unknown>[], elements = ['eu-1', 'us-1']) {
  return {
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'ApplicationSet',
    metadata: { name },
    spec: {
      generators: [{ list: { elements: elements.map((cluster) => ({ cluster })) } }],
      template: {
        metadata: { name: `${name}-{{cluster}}` },
        spec: {
          project: 'default',
          sources,
          destination: { name: '{{cluster}}', namespace: 'web' },
        },
      },
    },
  };
}

/** The chart from the Helm repository with `valueFiles`, and the values repository as ref `values`. */
const chartWithValues = (valueFiles: string[]) => [
  { repoURL: charts.url, chart: 'web', targetRevision: '^1.0.0', helm: { releaseName: 'web', valueFiles } },
  { repoURL: values.url, targetRevision: 'main', ref: 'values' },
];

async function submit(doc: ReturnType<typeof multiAppSet>) {
  const created = await fleet.call<{ id: string; code?: string; path?: string }>(
    'POST',
    '/api/v1/appsets',
    doc,
  );
  return created;
}

/** Submits and expands an appset; its outcome, targets and each target's bundle. */
async function apply(doc: ReturnType<typeof multiAppSet>) {
  expect([200, 201]).toContain((await submit(doc)).status);
  const appSet = await db.prisma.applicationSet.findUniqueOrThrow({ where: { name: doc.metadata.name } });
  const outcome = await expander.expand(appSet.id);
  const targets = await db.prisma.target.findMany({
    where: { appSetId: appSet.id },
    orderBy: { name: 'asc' },
  });
  const bundles: Record<string, KubeObject[]> = {};
  for (const t of targets) bundles[t.name] = await bundleOf(t.bundleDigest);
  return { outcome, targets, bundles };
}

async function bundleOf(digest: string | null): Promise<KubeObject[]> {
  const b = await db.prisma.bundle.findUnique({ where: { digest: digest ?? '' } });
  return (b?.manifests ?? []) as unknown as KubeObject[];
}

const dataOf = (objects: KubeObject[]) =>
  (objects.find((o) => o.kind === 'ConfigMap') as { data?: Record<string, string> } | undefined)?.data;

beforeAll(async () => {
  charts = await startTestHelmRepository([WEB]);
  values = createTestGitRepo({
    'web/values.yaml': 'greeting: from-git\n',
    'envs/eu-1.yaml': 'greeting: hello-eu\n',
    'envs/us-1.yaml': 'greeting: hello-us\n',
    'base/kustomization.yaml': 'resources:\n  - cm.yaml\n',
    'base/cm.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: base\n',
  });
  fleet = await startTwoClusterFleet({ HELM_REPOSITORY_CACHE_SECONDS: '0' });
  db = fleet.hub.app.get(Database);
  expander = fleet.hub.app.get(AppSetExpander);
}, 120_000);

afterAll(async () => {
  await fleet?.close();
  await charts?.stop();
  values?.remove();
});

describe('a chart from a Helm repository with values from Git (spec.sources)', () => {
  it('registers and fetches the values repository, renders with the $ref value file and records each source', async () => {
    const { outcome, targets, bundles } = await apply(
      multiAppSet('multi', chartWithValues(['$values/web/values.yaml'])),
    );
    // The expansion the submission queued may have written them first.
    expect(outcome.status).toBe('Ready');
    expect(targets.map((t) => t.name)).toEqual(['multi-eu-1', 'multi-us-1']);
    const sha = values.head();
    expect(dataOf(bundles['multi-eu-1'] ?? [])).toEqual({ chart: '1.0.0', greeting: 'from-git' });
    // Same chart, version, value files and commit: one bundle for both clusters.
    expect(targets[0]?.bundleDigest).toBe(targets[1]?.bundleDigest);
    expect(targets[0]).toMatchObject({
      repoUrl: charts.url,
      sourcePath: 'web',
      targetRevision: '^1.0.0,main',
      desiredRevision: `1.0.0,${sha}`,
    });
    expect(targets[0]?.sources).toEqual([
      { repoUrl: charts.url, chart: 'web', targetRevision: '^1.0.0', revision: '1.0.0' },
      { repoUrl: values.url, ref: 'values', targetRevision: 'main', revision: sha },
    ]);
    // The values repository is a Git repository the appset reads: registered, mirrored, tracked.
    const repo = await db.prisma.repository.findUniqueOrThrow({ where: { url: values.url } });
    expect(repo.lastFetchedAt).not.toBeNull();
    expect(
      (await db.prisma.applicationSet.findUniqueOrThrow({ where: { name: 'multi' } })).repoUrls,
    ).toContain(values.url);
    // The Helm repository is not a Git repository: nothing registered for it.
    expect(await db.prisma.repository.count({ where: { url: charts.url } })).toBe(0);
    const listed = await fleet.call<TargetListItemView[]>('GET', '/api/v1/targets?name=multi-eu-1');
    expect(listed.body[0]?.sources?.map((s) => s.revision)).toEqual(['1.0.0', sha]);
  });

  it('a commit to the values repository re-renders the targets and releases the new bundle to the agents', async () => {
    const before = await db.prisma.target.findUniqueOrThrow({ where: { name: 'multi-eu-1' } });
    const sha = values.commit({ 'web/values.yaml': 'greeting: changed-in-git\n' });
    const repo = await db.prisma.repository.findUniqueOrThrow({ where: { url: values.url } });
    expect((await fleet.call('POST', `/api/v1/repositories/${repo.id}/refresh`)).status).toBeLessThan(300);
    await expect
      .poll(
        async () =>
          (await db.prisma.target.findUniqueOrThrow({ where: { name: 'multi-eu-1' } })).releasedRevision,
        { timeout: 60_000 },
      )
      .toBe(`1.0.0,${sha}`);
    const after = await db.prisma.target.findUniqueOrThrow({ where: { name: 'multi-eu-1' } });
    expect(after.bundleDigest).not.toBe(before.bundleDigest);
    expect(dataOf(await bundleOf(after.bundleDigest))?.['greeting']).toBe('changed-in-git');
    const assigned = await fleet.agent<AssignmentsResponse>('eu-1', 'GET', '/api/agent/v1/assignments');
    expect(assigned.body.assignments.find((a) => a.name === 'multi-eu-1')).toMatchObject({
      revision: `1.0.0,${sha}`,
      bundleDigest: after.bundleDigest,
    });
  });

  it('value files that differ per cluster are two renders, each cluster its own bundle', async () => {
    const { outcome, targets, bundles } = await apply(
      multiAppSet('per-cluster', chartWithValues(['$values/envs/{{cluster}}.yaml'])),
    );
    expect(outcome.status).toBe('Ready');
    expect(targets[0]?.bundleDigest).not.toBe(targets[1]?.bundleDigest);
    expect(dataOf(bundles['per-cluster-eu-1'] ?? [])?.['greeting']).toBe('hello-eu');
    expect(dataOf(bundles['per-cluster-us-1'] ?? [])?.['greeting']).toBe('hello-us');
  });

  it('a Git directory beside the chart is rendered into the same bundle; one object twice is refused', async () => {
    const [chart, ref] = chartWithValues(['$values/web/values.yaml']);
    const app = { repoURL: fleet.repo.url, targetRevision: 'main', path: 'app' };
    const mixed = await apply(
      multiAppSet('mixed', [{ ...chart, helm: { releaseName: 'site' } }, ref ?? {}, app], ['eu-1']),
    );
    expect(mixed.outcome.status).toBe('Ready');
    expect((mixed.bundles['mixed-eu-1'] ?? []).map((o) => o.metadata.name).sort()).toEqual([
      'site-config',
      'web-config',
    ]);
    expect(
      (mixed.targets[0]?.sources as TargetSourceView[] | null)?.map((s) => s.path ?? s.chart ?? s.ref),
    ).toEqual(['web', 'values', 'app']);
    // Release `web` renders ConfigMap web-config, which app/config.yaml declares too.
    const twice = await apply(multiAppSet('twice', [chart ?? {}, ref ?? {}, app], ['eu-1']));
    expect(twice.outcome.status).toBe('Error');
    expect(twice.outcome.error?.message).toContain(
      'spec.sources[2]: ConfigMap web-config is also rendered by spec.sources[0]',
    );
  });
});

describe('multi-source applications the hub refuses, naming the field', () => {
  it.each([
    [
      'kustomize options',
      [{ repoURL: 'https://git.example.com/x.git', path: 'base', kustomize: { namePrefix: 'a-' } }],
      'unsupported-source',
      'spec.template.spec.sources[0].kustomize',
    ],
    [
      'a config management plugin',
      [{ repoURL: 'https://git.example.com/x.git', path: 'a', plugin: { name: 'cmp' } }],
      'unsupported-source',
      'spec.template.spec.sources[0].plugin',
    ],
    [
      'an OCI registry reference carrying credentials',
      [{ repoURL: 'oci://user:secret@127.0.0.1:1/charts', chart: 'web', targetRevision: '1.0.0' }],
      'invalid-appset',
      'spec.template.spec.sources[0].repoURL',
    ],
    [
      'a value file naming a ref no source declares',
      [
        { repoURL: 'https://charts.example.com', chart: 'web', helm: { valueFiles: ['$vals/x.yaml'] } },
        { repoURL: 'https://git.example.com/values.git', ref: 'values' },
      ],
      'invalid-appset',
      'spec.template.spec.sources[0].helm.valueFiles[0]',
    ],
    [
      'a Git URL the hub refuses in a ref source',
      [
        { repoURL: 'https://charts.example.com', chart: 'web' },
        { repoURL: 'ext::sh -c true', ref: 'values' },
      ],
      'invalid-repository-url',
      'spec.template.spec.sources[1].repoURL',
    ],
  ])('%s → 400, nothing stored', async (_what, sources, code, path) => {
    const r = await submit(multiAppSet('refused', sources));
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ code, path });
    expect(await db.prisma.applicationSet.count({ where: { name: 'refused' } })).toBe(0);
  });

  it('a Git source that is a kustomization fails the expansion, naming the source, and changes no target', async () => {
    const { outcome, targets } = await apply(
      multiAppSet(
        'kustomized',
        [...chartWithValues([]), { repoURL: values.url, targetRevision: 'main', path: 'base' }],
        ['eu-1'],
      ),
    );
    expect(outcome.status).toBe('Error');
    expect(outcome.error?.code).toBe('unsupported-source');
    expect(outcome.error?.message).toContain('spec.sources[2].path: "base" is a kustomization');
    expect(targets).toHaveLength(0);
  });

  it('a $ref value file leaving its repository fails the expansion naming the field', async () => {
    const { outcome } = await apply(
      multiAppSet('escape', chartWithValues(['$values/../../etc/passwd']), ['eu-1']),
    );
    expect(outcome.status).toBe('Error');
    expect(outcome.error?.message).toContain('spec.sources[0].helm.valueFiles[0]');
    expect(outcome.error?.message).toContain('leaves the repository');
  });
});
