import { type CommandDescription } from '../command.js';
import { describeOffline } from '../offline/offline-command.js';
import { stringify } from 'yaml';
import type { KubeObject } from '@flotilla/contract';
import { generate, parseApplicationSet, type ClusterInfo } from '@flotilla/generators';
import {
  bundleDigest,
  DEFAULT_KUBE_VERSION,
  ManifestError,
  parseApplicationSources,
  type Capabilities,
} from '@flotilla/manifests';
import {
  ChartRepositoryClient,
  KustomizeProcess,
  renderApplication,
  resolveHelmBinary,
  type RenderEnvironment,
} from '@flotilla/manifests/node';
import {
  errorResult,
  many,
  readOneDocument,
  offlineCommand,
  UsageError,
} from '../offline/offline-command.js';
import { directoryRepository, normalizeRepoURL, parseRepos, readClusters } from './generate.command.js';

const USAGE = `usage: flotilla render -f FILE [-f FILE]... [--repo URL=DIR]... [--cluster NAME --clusters FILE]
                       [--kube-version V] [--api-versions LIST] -o json|yaml

Renders what the hub would render for an Argo CD Application (spec.source or spec.sources) or for
the targets of an ApplicationSet, with the hub's own render code: Helm charts with the real
\`helm template\` (Argo CD's flags and value order), kustomizations, plain directories.

  -f, --file FILE       an Application or an ApplicationSet, YAML or JSON; repeatable
  --repo URL=DIR        a local checkout of a Git repository a source (or a ref: source) names
  --clusters FILE       the cluster inventory for an ApplicationSet: [{name, server, labels, annotations}]
  --cluster NAME        render only the target of that cluster
  --kube-version V      Kubernetes version Helm sees as .Capabilities (default 1.32.0)
  --api-versions LIST   comma-separated group/version[/Kind], added to Helm's built-in ones
  -o, --output          json ({"targets": [...]}) or yaml (one target's objects as a YAML stream)

Helm: HELM_BINARY, else helm on PATH, else the Helm that npm ci unpacked.`;

const OPTIONS = {
  file: { type: 'string', short: 'f', multiple: true },
  repo: { type: 'string', multiple: true },
  clusters: { type: 'string' },
  cluster: { type: 'string' },
  'kube-version': { type: 'string' },
  'api-versions': { type: 'string' },
} as const;

export { DEFAULT_KUBE_VERSION };

export interface RenderedTarget {
  name: string;
  cluster: string | null;
  digest: string;
  objects: KubeObject[];
}

interface RenderOutput {
  targets: RenderedTarget[];
}

/** One Application to render: its name, destination and spec as the hub holds a target. */
export interface Candidate {
  name: string;
  cluster: string | null;
  spec: Record<string, unknown>;
  at: string;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The Application(s) a file stands for: itself, or the targets its appset's generators yield. */
export function candidatesOf(
  doc: unknown,
  file: string,
  clusters: ClusterInfo[],
  cluster: string | undefined,
  repos: Map<string, string>,
): Candidate[] {
  if (!isRecord(doc)) throw new UsageError(`${file}: expected an Application or an ApplicationSet`);
  const kind = doc['kind'];
  if (kind === 'Application') {
    const metadata = isRecord(doc['metadata']) ? doc['metadata'] : {};
    const name = metadata['name'];
    if (typeof name !== 'string' || name === '') {
      throw new ManifestError(
        'manifest-missing-field',
        'metadata.name',
        'an Application needs a name (Helm release name)',
      );
    }
    const spec = isRecord(doc['spec']) ? doc['spec'] : {};
    const dest = isRecord(spec['destination']) ? spec['destination'] : {};
    const destName = typeof dest['name'] === 'string' && dest['name'] !== '' ? dest['name'] : null;
    return [{ name, cluster: destName, spec, at: 'spec' }];
  }
  if (kind !== 'ApplicationSet') {
    throw new UsageError(`${file}: kind ${JSON.stringify(kind)} is neither Application nor ApplicationSet`);
  }
  if (cluster !== undefined && clusters.length === 0) {
    throw new UsageError('--cluster needs --clusters FILE (the inventory the generators read)');
  }
  const ctx = {
    clusters,
    repository(repoURL: string) {
      const dir = repos.get(normalizeRepoURL(repoURL));
      if (dir === undefined) throw new Error(`no --repo ${repoURL}=DIR was given`);
      return directoryRepository(dir);
    },
  };
  const result = generate(parseApplicationSet(doc), ctx);
  const byServer = new Map(clusters.map((c) => [c.server, c.name]));
  const all = result.targets.map((t, i): Candidate => {
    const dest = t.application.spec.destination;
    const name = dest.name || (dest.server ? byServer.get(dest.server) : undefined) || null;
    return {
      name: t.application.metadata.name,
      cluster: name,
      spec: t.application.spec,
      at: `targets[${i}].spec`,
    };
  });
  if (cluster === undefined) return all;
  const picked = all.filter((c) => c.cluster === cluster);
  if (picked.length === 0) {
    throw new ManifestError(
      'manifest-invalid-source',
      '--cluster',
      `the appset has no target for cluster "${cluster}" (targets for: ${[...new Set(all.map((c) => c.cluster ?? '?'))].join(', ') || 'none'})`,
    );
  }
  return picked;
}

export function capabilitiesFrom(values: Record<string, unknown>): Capabilities {
  const kubeVersion =
    typeof values['kube-version'] === 'string' ? values['kube-version'] : DEFAULT_KUBE_VERSION;
  if (!/^v?\d+\.\d+(\.\d+)?([-+][0-9A-Za-z.+-]*)?$/.test(kubeVersion)) {
    throw new UsageError(`--kube-version '${kubeVersion}' is not a Kubernetes version such as 1.32.0`);
  }
  const raw = typeof values['api-versions'] === 'string' ? values['api-versions'] : '';
  const apiVersions = raw
    .split(',')
    .map((v) => v.trim())
    .filter((v) => v !== '');
  for (const v of apiVersions) {
    if (!/^[A-Za-z0-9.-]+(\/[A-Za-z0-9.-]+){0,2}$/.test(v)) {
      throw new UsageError(`--api-versions: '${v}' is not group/version or group/version/Kind`);
    }
  }
  return { kubeVersion, apiVersions };
}

export function environment(repos: Map<string, string>): RenderEnvironment {
  const helm = resolveHelmBinary({
    ...(process.env['HELM_BINARY'] !== undefined ? { HELM_BINARY: process.env['HELM_BINARY'] } : {}),
    ...(process.env['PATH'] !== undefined ? { PATH: process.env['PATH'] } : {}),
  });
  return {
    helm: helm ? { binary: helm.path, timeoutMs: 60_000, maxOutputBytes: 64 * 1024 * 1024 } : null,
    charts: new ChartRepositoryClient(),
    kustomize: new KustomizeProcess({
      binary: null,
      timeoutMs: 60_000,
      maxOutputBytes: 64 * 1024 * 1024,
      allowRemoteBases: false,
    }),
    repositories: {
      dirOf(repoURL, _revision, at) {
        const dir = repos.get(normalizeRepoURL(repoURL));
        if (dir === undefined) {
          throw new ManifestError(
            'manifest-invalid-source',
            at,
            `no --repo ${repoURL}=DIR was given for this Git repository`,
          );
        }
        return dir;
      },
    },
  };
}

/** Renders one Application as the hub renders a target: its objects in apply order, and their digest. */
export async function renderCandidate(
  c: Candidate,
  capabilities: Capabilities,
  env: RenderEnvironment,
): Promise<RenderedTarget> {
  const dest = isRecord(c.spec['destination']) ? c.spec['destination'] : {};
  const namespace =
    typeof dest['namespace'] === 'string' && dest['namespace'] !== '' ? dest['namespace'] : undefined;
  const rendered = await renderApplication(
    {
      name: c.name,
      ...(namespace ? { namespace } : {}),
      ...(typeof c.spec['project'] === 'string' ? { project: c.spec['project'] } : {}),
      sources: parseApplicationSources(c.spec, c.at),
      capabilities,
    },
    env,
  );
  return {
    name: c.name,
    cluster: c.cluster,
    digest: bundleDigest(rendered.objects),
    objects: rendered.objects,
  };
}

function yamlStream(value: unknown): string {
  const { targets } = value as RenderOutput;
  if (Array.isArray(value) || targets.length !== 1) {
    throw new UsageError('-o yaml prints one target; give one -f and --cluster, or use -o json');
  }
  return (targets[0]?.objects ?? []).map((o) => `---\n${stringify(o)}`).join('');
}

export const run = offlineCommand('render', USAGE, OPTIONS, async (values) => {
  const files = many(values['file']);
  if (files.length === 0) throw new UsageError(`render needs at least one -f FILE\n${USAGE}`);
  const clustersFile = values['clusters'];
  const clusters = readClusters(typeof clustersFile === 'string' ? clustersFile : undefined);
  const cluster = typeof values['cluster'] === 'string' ? values['cluster'] : undefined;
  const repos = parseRepos(many(values['repo']));
  const capabilities = capabilitiesFrom(values);
  const docs = files.map((f) => readOneDocument(f, { uniqueKeys: false }));
  const env = environment(repos);
  const results: (RenderOutput | { error: string })[] = [];
  for (const [i, doc] of docs.entries()) {
    try {
      const targets: RenderedTarget[] = [];
      for (const c of candidatesOf(doc, files[i] as string, clusters, cluster, repos))
        targets.push(await renderCandidate(c, capabilities, env));
      results.push({ targets });
    } catch (err) {
      results.push(errorResult(err));
    }
  }
  return { results, batch: results.length > 1, yaml: yamlStream };
});

export const describe: CommandDescription = describeOffline(OPTIONS);
