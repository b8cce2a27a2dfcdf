import 'reflect-metadata';
import { mkdirSync, readdirSync, readFileSync, statSync, symlinkSync } from 'node:fs';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundleDigest } from '@flotilla/manifests';
import type { KubeObject } from '@flotilla/contract';
import { Database } from '../db/database.js';
import { RepositoriesService } from '../sources/repositories/repositories.service.js';
import { createTestGitRepo, startTestHub, type TestGitRepo, type TestHub } from '../testing/index.js';
import { RenderService } from './render.service.js';
import { RenderError } from './render-error.js';
import { type RenderSource } from './render-source.js';

// Rendering on the real hub: PostgreSQL, Redis, a Git repository mirrored by simple-git, and
// `kubectl kustomize` (Kustomize v5) run in a temporary checkout.

const FIXTURES = new URL('./testdata/kustomize/', import.meta.url).pathname;

function fixtureFiles(): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const full = join(dir, name);
      if (statSync(full).isDirectory()) walk(full);
      else out[relative(FIXTURES, full)] = readFileSync(full, 'utf8');
    }
  };
  walk(FIXTURES);
  return out;
}

let hub: TestHub;
let repo: TestGitRepo;
let render: RenderService;
let db: Database;
let repositoryId: string;
let sha: string;

const source = (path: string, kustomize?: unknown): RenderSource => ({
  repositoryId,
  repoUrl: repo.url,
  revision: sha,
  path,
  ...(kustomize !== undefined && { kustomize }),
});

async function renderError(src: RenderSource): Promise<RenderError> {
  try {
    await render.renderBundle(src);
  } catch (e) {
    if (e instanceof RenderError) return e;
    throw e;
  }
  throw new Error(`rendering ${src.path} succeeded`);
}

beforeAll(async () => {
  repo = createTestGitRepo({
    ...fixtureFiles(),
    'remote/kustomization.yaml':
      'resources:\n  - https://github.com/kubernetes-sigs/kustomize//examples/helloWorld?ref=v5.5.0\n',
    'escape/kustomization.yaml': 'resources:\n  - ../../../../etc\n',
    'via-escape/kustomization.yaml': 'resources:\n  - ../base\n  - ../escape\n',
    'options-refused/pvc.yaml':
      'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: keep\n  annotations:\n    argocd.argoproj.io/sync-options: Prune=false\n---\napiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: data\n  namespace: db\n  annotations:\n    argocd.argoproj.io/sync-options: Prune=false,Delete=confirm\nspec: {}\n',
    'options-honoured/cm.yaml':
      'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: keep\n  annotations:\n    argocd.argoproj.io/sync-options: Prune=false, ServerSideApply=false\n    argocd.argoproj.io/compare-options: IgnoreExtraneous\n',
    'big/huge.yaml': `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: huge\ndata:\n  blob: "${'x'.repeat(4 * 1024 * 1024 + 10)}"\n`,
  });
  // Symlinks: one inside the repository (read through), one out of it (refused).
  mkdirSync(join(repo.dir, 'linked'));
  symlinkSync('../plain/configmap.yaml', join(repo.dir, 'linked', 'configmap.yaml'), 'file');
  sha = repo.commit({}, 'links');
  hub = await startTestHub();
  render = hub.app.get(RenderService);
  db = hub.app.get(Database);
  const repos = hub.app.get(RepositoriesService);
  repositoryId = (await repos.register(repo.url, 'user:test')).id;
  expect((await repos.syncNow(repositoryId)).ok).toBe(true);
}, 60_000);

afterAll(async () => {
  await hub?.close();
  repo?.remove();
});

describe('kustomize rendering', () => {
  it('builds an overlay with its base and stores the bundle by digest', async () => {
    const b = await render.renderBundle(source('overlays/prod'));
    expect(b.renderer).toBe('kustomize');
    const names = b.manifests.map((m) => `${m.kind}/${m.metadata.name}`);
    expect(names).toEqual(expect.arrayContaining(['Deployment/prod-web']));
    expect(names.some((n) => /^ConfigMap\/prod-web-config-[a-z0-9]{10}$/.test(n))).toBe(true);
    expect(b.digest).toBe(bundleDigest(b.manifests));
    const stored = await db.prisma.bundle.findUnique({ where: { digest: b.digest } });
    expect(stored?.path).toBe('overlays/prod');
  });

  it('applies Argo CD source.kustomize options through a generated overlay', async () => {
    const b = await render.renderBundle(
      source('base', {
        namePrefix: 'eu-',
        nameSuffix: '-v2',
        namespace: 'web-eu',
        commonLabels: { region: 'eu' },
        commonAnnotations: { 'team.example/owner': 'web' },
        images: ['nginx=registry.example/nginx:1.27'],
      }),
    );
    const deploy = b.manifests.find((m) => m.kind === 'Deployment') as KubeObject & {
      spec: { template: { spec: { containers: { image: string }[] } } };
    };
    expect(deploy.metadata.name).toBe('eu-web-v2');
    expect(deploy.metadata.namespace).toBe('web-eu');
    expect(deploy.metadata.labels).toMatchObject({ app: 'web', region: 'eu' });
    expect(deploy.metadata.annotations).toEqual({ 'team.example/owner': 'web' });
    expect(deploy.spec.template.spec.containers[0]?.image).toBe('registry.example/nginx:1.27');
    // Different options, different bundle; the plain base is its own.
    expect(b.digest).not.toBe((await render.renderBundle(source('base'))).digest);
  });

  it('gives a plain directory kustomize options by writing it a kustomization', async () => {
    const b = await render.renderBundle(source('plain', { namePrefix: 'x-' }));
    expect(b.renderer).toBe('kustomize');
    expect(b.manifests.map((m) => m.metadata.name)).toEqual(['x-plain-settings']);
  });

  it("shows a failing kustomization's stderr, with repository paths", async () => {
    const e = await renderError(source('broken'));
    expect(e.code).toBe('kustomize-failed');
    expect(e.message).toContain('kustomize build of broken failed');
    expect(e.message).toContain("accumulating resources from 'missing.yaml'");
    expect(e.message).not.toContain('flotilla-render-');
  });

  it('refuses remote bases unless configured', async () => {
    const e = await renderError(source('remote'));
    expect(e.code).toBe('manifest-remote-base');
    expect(e.message).toMatch(/remote\/kustomization\.yaml: resources\[0\]: .* is a remote base/);
  });

  it('refuses kustomizations that climb out of the repository, also through a base', async () => {
    const direct = await renderError(source('escape'));
    expect(direct.code).toBe('manifest-unsafe-path');
    expect(direct.message).toContain(
      'escape/kustomization.yaml: resources[0]: "../../../../etc" points outside',
    );
    const via = await renderError(source('via-escape'));
    expect(via.code).toBe('manifest-unsafe-path');
    expect(via.message).toContain('escape/kustomization.yaml');
  });

  it('refuses invalid source.kustomize options with the field named', async () => {
    const e = await renderError(source('base', { patches: [{ path: 'x.yaml' }] }));
    expect(e.code).toBe('manifest-invalid-kustomize-options');
    expect(e.message).toContain('spec.source.kustomize.patches');
  });
});

describe('sync options on rendered objects', () => {
  it('refuses a bundle with an option the agent would not honour, naming object and entry', async () => {
    const e = await renderError(source('options-refused'));
    expect(e.code).toBe('unsupported-sync-option');
    expect(e.message).toMatch(/^PersistentVolumeClaim db\/data: Delete=confirm is not supported/);
    expect(e.path).toContain('metadata.annotations["argocd.argoproj.io/sync-options"][1]');
    expect(await db.prisma.bundle.count({ where: { path: 'options-refused' } })).toBe(0);
  });

  it('renders what it honours', async () => {
    const b = await render.renderBundle(source('options-honoured'));
    expect(b.manifests.map((m) => m.metadata.name)).toEqual(['keep']);
  });
});

describe('plain rendering', () => {
  it('reads a symlink that stays inside the repository', async () => {
    const b = await render.renderBundle(source('linked'));
    expect(b.renderer).toBe('plain');
    expect(b.manifests.map((m) => m.metadata.name)).toEqual(['plain-settings']);
  });

  it.each([
    ['../plain', 'manifest-unsafe-path'],
    ['/etc', 'manifest-unsafe-path'],
    ['big', 'manifest-too-large'],
    ['does/not/exist', 'path-not-found'],
  ])('refuses %s (%s)', async (path, code) => {
    expect((await renderError(source(path))).code).toBe(code);
  });

  it('refuses a symlink that points out of the repository', async () => {
    symlinkSync('/etc/passwd', join(repo.dir, 'linked', 'passwd.yaml'), 'file');
    const next = repo.commit({}, 'escape link');
    await hub.app.get(RepositoriesService).syncNow(repositoryId);
    const e = await renderError({ ...source('linked'), revision: next });
    expect(e.code).toBe('manifest-unsafe-path');
    expect(e.message).toContain('linked/passwd.yaml');
  });
});

describe('render determinism', () => {
  it('two renders of the same new input at once agree and record it once', async () => {
    const [a, b] = await Promise.all([
      render.renderBundle(source('base', { namePrefix: 'twice-' })),
      render.renderBundle(source('base', { namePrefix: 'twice-' })),
    ]);
    expect(a.digest).toBe(b.digest);
    const records = await db.prisma.renderRecord.findMany({
      where: { repositoryId, revision: sha, path: 'base', digest: a.digest },
    });
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({ deterministic: true, options: { namePrefix: 'twice-' } });
  });

  it('records each input with its digest and refuses a re-render that gives another one', async () => {
    const first = await render.renderBundle(source('overlays/prod'));
    const record = await db.prisma.renderRecord.findFirstOrThrow({
      where: { repositoryId, revision: sha, path: 'overlays/prod' },
    });
    expect(record).toMatchObject({ digest: first.digest, deterministic: true, renderer: 'kustomize' });

    // Pretend an earlier render of the same input gave other manifests.
    const other = bundleDigest([{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'other' } }]);
    await db.prisma.renderRecord.update({ where: { key: record.key }, data: { digest: other } });
    const e = await renderError(source('overlays/prod'));
    expect(e.code).toBe('render-nondeterministic');
    expect(e.message).toContain(other);

    const flagged = await db.prisma.renderRecord.findUniqueOrThrow({ where: { key: record.key } });
    expect(flagged).toMatchObject({ deterministic: false, conflictingDigest: first.digest });
    const audit = await db.prisma.auditEvent.findFirst({ where: { action: 'render.nondeterministic' } });
    expect(audit?.details).toMatchObject({ path: 'overlays/prod', digests: [other, first.digest] });
    const metrics = await (await fetch(`${hub.url}/metrics`)).text();
    expect(metrics).toMatch(
      /flotilla_renders_total\{renderer="kustomize",outcome="nondeterministic"\} [1-9]/,
    );
  });
});
