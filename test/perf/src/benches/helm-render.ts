import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import pLimit from 'p-limit';
import { waitFor } from '@flotilla/cli/fleet';
import { resolveHelmBinary } from '@flotilla/manifests/node';
import { type HubStack } from '../hub-stack.js';
import { figure } from '../stats.js';
import { type Figure } from '../types.js';

const COMMAND = 'npm run bench -- --only desired';

/** A chart of three objects whose ConfigMap carries `.Values.cluster`. */
const CHART: Record<string, string> = {
  'Chart.yaml': 'apiVersion: v2\nname: bench\nversion: 1.0.0\n',
  'values.yaml': 'cluster: none\nreplicas: 2\nimage: registry.example/web:1.0.0\n',
  'templates/deployment.yaml': `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
spec:
  replicas: {{ .Values.replicas }}
  selector:
    matchLabels: { app: {{ .Release.Name }} }
  template:
    metadata:
      labels: { app: {{ .Release.Name }} }
    spec:
      containers:
        - name: web
          image: {{ .Values.image | quote }}
`,
  'templates/service.yaml': `apiVersion: v1
kind: Service
metadata:
  name: {{ .Release.Name }}
spec:
  selector: { app: {{ .Release.Name }} }
  ports: [{ port: 80 }]
`,
  'templates/config.yaml': `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-config
data:
  cluster: {{ .Values.cluster | quote }}
`,
};

/**
 * Helm at fleet scale, on the stack's registered clusters: a chart every cluster shares renders
 * exactly once; then values that differ only by cluster name are one render per cluster, timed
 * against the same number of bare `helm template` runs with the hub's own parallelism.
 */
export async function helmRenderFigures(
  stack: HubStack,
  repositoryId: string,
  clusters: number,
  capMs: number,
  progress: (line: string) => void,
): Promise<{ figures: Figure[]; remarks: string[] }> {
  const helm = resolveHelmBinary({ PATH: process.env['PATH'] ?? '' });
  if (!helm) return { figures: [], remarks: ['no helm binary: the Helm figures were not measured'] };
  // The stack's other appsets go first: a commit re-expands them, and their renders would be
  // counted with the charts'.
  const appSets = await stack.api.request<{ name: string }[]>('GET', '/api/v1/appsets');
  for (const a of appSets) await stack.api.request('DELETE', `/api/v1/appsets/${a.name}`);
  await waitFor(
    'the other appsets to go',
    async () =>
      Number(
        (await stack.sql((c) => c.query<{ n: string }>('SELECT count(*) AS n FROM "Target"'))).rows[0]?.n,
      ) === 0
        ? true
        : undefined,
    { timeoutMs: 120_000, intervalMs: 200 },
  );
  const chartDir = join(stack.repo.dir, 'charts', 'bench');
  for (const [path, content] of Object.entries(CHART)) {
    mkdirSync(join(chartDir, path, '..'), { recursive: true });
    writeFileSync(join(chartDir, path), content);
  }
  await stack.repo.git.add('.');
  await stack.repo.git.commit('the bench chart');
  const sha = (await stack.repo.git.revparse(['HEAD'])).trim();
  await stack.api.request('POST', `/api/v1/repositories/${repositoryId}/refresh`);
  await waitFor(
    'the hub to fetch the bench chart',
    async () => {
      const r = await stack.api.request<{ refs: Record<string, string> }>(
        'GET',
        `/api/v1/repositories/${repositoryId}`,
      );
      return Object.values(r.refs).includes(sha) ? true : undefined;
    },
    { timeoutMs: 60_000, intervalMs: 100 },
  );

  const figures: Figure[] = [];
  const remarks: string[] = [];
  const expand = async (
    name: string,
    helmOptions: unknown,
  ): Promise<{ ms: number; renders: number } | null> => {
    await stack.api.request('DELETE', `/api/v1/appsets/${name}`).catch(() => undefined);
    const before = await rendersSoFar(stack);
    const t0 = performance.now();
    await stack.api.createAppSet(helmAppSet(name, stack.repoUrl, helmOptions));
    try {
      await waitFor(
        `${name}: ${clusters} Helm targets`,
        async () => {
          const v = await stack.api.request<{
            status: string;
            targetCount: number;
            error?: { message?: string };
          }>('GET', `/api/v1/appsets/${name}`);
          if (v.status === 'Error') throw new Error(`${name} failed: ${v.error?.message ?? ''}`);
          return v.status === 'Ready' && v.targetCount === clusters ? true : undefined;
        },
        { timeoutMs: capMs, intervalMs: 100 },
      );
    } catch (err) {
      if (!(err instanceof Error) || !err.message.startsWith('timed out')) throw err;
      return null;
    }
    const ms = performance.now() - t0;
    const renders = (await rendersSoFar(stack)) - before;
    await stack.api.request('DELETE', `/api/v1/appsets/${name}`).catch(() => undefined);
    return { ms, renders };
  };

  const shared = await expand('helm-shared', { releaseName: 'bench' });
  if (shared) {
    progress(
      `helm, ${clusters} clusters sharing a chart: ${shared.renders} render(s), ${shared.ms.toFixed(0)} ms`,
    );
    figures.push(
      figure({
        id: `desired.helm-renders-shared.${clusters}`,
        bench: 'desired',
        title: `Helm renders for one chart and values shared by ${clusters} clusters`,
        unit: 'renders',
        fleetSize: clusters,
        samples: [shared.renders],
        target: {
          on: 'max',
          op: '=',
          value: 1,
          text: 'a chart shared by 1,000 clusters renders exactly once',
        },
        notes: `flotilla_expansion_renders_total over the expansion; it took ${shared.ms.toFixed(0)} ms to Ready`,
        command: COMMAND,
      }),
    );
  } else remarks.push(`helm-shared did not finish within ${capMs / 1000} s`);

  const slots = availableParallelism();
  const perCluster = await expand('helm-per-cluster', {
    releaseName: 'bench',
    parameters: [{ name: 'cluster', value: '{{name}}' }],
  });
  if (!perCluster) {
    remarks.push(`helm-per-cluster did not finish within ${capMs / 1000} s`);
    return { figures, remarks };
  }
  progress(
    `helm, ${clusters} clusters with their own values: ${perCluster.renders} renders, ${perCluster.ms.toFixed(0)} ms`,
  );
  // The floor: the same number of bare helm template runs, as many at once as the hub's slots.
  const limit = pLimit(slots);
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: clusters }, (_, i) =>
      limit(() => helmTemplate(helm.path, chartDir, ['--set', `cluster=c-${i + 1}`], stack.workDir)),
    ),
  );
  const floorMs = performance.now() - t0;
  progress(`floor: ${clusters} bare helm template runs, ${slots} at a time: ${floorMs.toFixed(0)} ms`);
  figures.push(
    figure({
      id: `desired.helm-per-cluster.${clusters}`,
      bench: 'desired',
      title: `hub expansion of a chart whose values differ by cluster name: ${clusters} clusters → ${clusters} renders, Ready`,
      unit: 'ms',
      fleetSize: clusters,
      samples: [perCluster.ms],
      floor: {
        what: `${clusters} bare helm template runs of the same chart, ${slots} at a time (RENDER_CONCURRENCY's default here)`,
        samples: [floorMs],
      },
      notes: `${perCluster.renders} distinct renders counted; each new input is rendered twice by the hub (the determinism check), so 2× the floor is the hub's own floor`,
      command: COMMAND,
    }),
  );
  return { figures, remarks };
}

function helmAppSet(name: string, repoUrl: string, helm: unknown): unknown {
  return {
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'ApplicationSet',
    metadata: { name },
    spec: {
      generators: [{ clusters: {} }],
      template: {
        metadata: { name: `${name}-{{name}}` },
        spec: {
          project: 'default',
          source: { repoURL: repoUrl, targetRevision: 'main', path: 'charts/bench', helm },
          destination: { name: '{{name}}', namespace: 'bench' },
        },
      },
    },
  };
}

function helmTemplate(binary: string, chartDir: string, args: string[], workDir: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const env = {
      PATH: process.env['PATH'] ?? '',
      HOME: workDir,
      HELM_CACHE_HOME: join(workDir, 'helm-cache'),
    };
    const child = spawn(binary, ['template', 'bench', chartDir, ...args], {
      env,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0 ? resolve() : reject(new Error(`helm template failed: ${stderr}`)),
    );
  });
}

async function rendersSoFar(stack: HubStack): Promise<number> {
  return (await stack.hubMetric('flotilla_expansion_renders_total')) ?? 0;
}
