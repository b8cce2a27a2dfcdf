import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { directoryRepository, run } from './generate.command.js';
import { runInProcess, type CommandOutcome } from '../testing/run-in-process.js';

let dir: string;
const file = (name: string, text: string): string => {
  const path = join(dir, name);
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, text);
  return path;
};

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'flotilla-generate-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));
afterEach(() => vi.restoreAllMocks());

const flotillaGenerate = (...argv: string[]): Promise<CommandOutcome> => runInProcess(run, argv);

const MATRIX = `apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: { name: addons, namespace: argocd }
spec:
  generators:
    - matrix:
        generators:
          - git:
              repoURL: https://github.com/example/addons.git
              revision: HEAD
              directories: [{ path: 'addons/*' }]
          - clusters:
              selector: { matchLabels: { env: prod } }
  template:
    metadata: { name: '{{path.basename}}-{{name}}' }
    spec:
      project: default
      source: { repoURL: https://github.com/example/addons.git, targetRevision: HEAD, path: '{{path}}' }
      destination: { server: '{{server}}', namespace: '{{path.basename}}' }
`;

const CLUSTERS = `- { name: prod-1, server: https://prod-1, labels: { env: prod }, annotations: { owner: a } }
- { name: dev-1, server: https://dev-1, labels: { env: dev } }
`;

describe('flotilla generate', () => {
  it('prints params and rendered targets for a matrix of git directories and clusters', async () => {
    file('repo/addons/metrics/kustomization.yaml', 'resources: []\n');
    file('repo/addons/logging/kustomization.yaml', 'resources: []\n');
    const appset = file('matrix.yaml', MATRIX);
    const clusters = file('clusters.yaml', CLUSTERS);
    const r = await flotillaGenerate(
      '-f',
      appset,
      '--clusters',
      clusters,
      '--repo',
      `https://github.com/example/addons=${join(dir, 'repo')}`,
      '-o',
      'json',
    );
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    const out = JSON.parse(r.out) as { params: Record<string, unknown>[]; targets: unknown[] };
    expect(out.params).toEqual([
      {
        path: 'addons/logging',
        'path.basename': 'logging',
        'path.basenameNormalized': 'logging',
        'path[0]': 'addons',
        'path[1]': 'logging',
        name: 'prod-1',
        nameNormalized: 'prod-1',
        server: 'https://prod-1',
        project: '',
        'metadata.labels.env': 'prod',
        'metadata.annotations.owner': 'a',
      },
      {
        path: 'addons/metrics',
        'path.basename': 'metrics',
        'path.basenameNormalized': 'metrics',
        'path[0]': 'addons',
        'path[1]': 'metrics',
        name: 'prod-1',
        nameNormalized: 'prod-1',
        server: 'https://prod-1',
        project: '',
        'metadata.labels.env': 'prod',
        'metadata.annotations.owner': 'a',
      },
    ]);
    expect(out.targets).toEqual([
      {
        metadata: {
          name: 'logging-prod-1',
          namespace: 'argocd',
          finalizers: ['resources-finalizer.argocd.argoproj.io'],
        },
        spec: {
          project: 'default',
          source: {
            repoURL: 'https://github.com/example/addons.git',
            targetRevision: 'HEAD',
            path: 'addons/logging',
          },
          destination: { server: 'https://prod-1', namespace: 'logging' },
        },
      },
      {
        metadata: {
          name: 'metrics-prod-1',
          namespace: 'argocd',
          finalizers: ['resources-finalizer.argocd.argoproj.io'],
        },
        spec: {
          project: 'default',
          source: {
            repoURL: 'https://github.com/example/addons.git',
            targetRevision: 'HEAD',
            path: 'addons/metrics',
          },
          destination: { server: 'https://prod-1', namespace: 'metrics' },
        },
      },
    ]);
  });

  it('shows duplicate target names instead of refusing them', async () => {
    const appset = file(
      'dup.yaml',
      `spec:
  generators:
    - list: { elements: [{ n: a }, { n: a }] }
  template: { metadata: { name: 'same-{{n}}' }, spec: {} }
`,
    );
    const r = await flotillaGenerate('-f', appset, '-o', 'json');
    expect(r.code).toBe(0);
    const out = JSON.parse(r.out) as { targets: { metadata: { name: string } }[] };
    expect(out.targets.map((t) => t.metadata.name)).toEqual(['same-a', 'same-a']);
  });

  it('exits 1 with {"error"} for a generator error, naming the generator and its path', async () => {
    const appset = file(
      'unknown.yaml',
      `apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
spec:
  generators:
    - list: { elements: [] }
    - pullRequest: { github: { owner: x, repo: y } }
  template: { metadata: { name: x }, spec: {} }
`,
    );
    const r = await flotillaGenerate('-f', appset, '-o', 'json');
    expect(r.code).toBe(1);
    const out = JSON.parse(r.out) as { error: string };
    expect(Object.keys(out)).toEqual(['error']);
    expect(out.error).toContain('spec.generators[1]');
    expect(out.error).toContain('pullRequest');
  });

  it('exits 1 for a template error (missingkey=error)', async () => {
    const appset = file(
      'missing.yaml',
      `spec:
  goTemplate: true
  goTemplateOptions: ["missingkey=error"]
  generators:
    - list: { elements: [{ cluster: a }] }
  template: { metadata: { name: '{{ .nope }}' }, spec: {} }
`,
    );
    const r = await flotillaGenerate('-f', appset, '-o', 'json');
    expect(r.code).toBe(1);
    expect((JSON.parse(r.out) as { error: string }).error).toContain('map has no entry for key "nope"');
  });

  it('prints a JSON array in input order for repeated -f, exiting 1 when one fails', async () => {
    const ok = file(
      'ok.yaml',
      `spec:
  generators: [{ list: { elements: [{ n: a }] } }]
  template: { metadata: { name: '{{n}}' }, spec: {} }
`,
    );
    const bad = file(
      'bad.yaml',
      `spec:
  generators: [{ nope: {} }]
  template: { metadata: { name: x }, spec: {} }
`,
    );
    const r = await flotillaGenerate('-f', ok, '-f', bad, '-f', ok, '-o', 'json');
    expect(r.code).toBe(1);
    const out = JSON.parse(r.out) as Record<string, unknown>[];
    expect(out).toHaveLength(3);
    expect(out[0]).toEqual({
      params: [{ n: 'a' }],
      targets: [
        { metadata: { name: 'a', finalizers: ['resources-finalizer.argocd.argoproj.io'] }, spec: {} },
      ],
    });
    expect(Object.keys(out[1] ?? {})).toEqual(['error']);
    expect(out[2]).toEqual(out[0]);
  });

  it('exits 2 with one line on stderr for unreadable input or bad usage', async () => {
    const missing = await flotillaGenerate('-f', join(dir, 'nope.yaml'), '-o', 'json');
    expect(missing.code).toBe(2);
    expect(missing.out).toBe('');
    expect(missing.err).toContain('nope.yaml');

    const noFile = await flotillaGenerate('-o', 'json');
    expect(noFile.code).toBe(2);

    const badRepo = await flotillaGenerate(
      '-f',
      file('x.yaml', MATRIX),
      '--repo',
      'no-equals-sign',
      '-o',
      'json',
    );
    expect(badRepo.code).toBe(2);
    expect(badRepo.err).toContain('URL=DIR');

    const badClusters = await flotillaGenerate(
      '-f',
      file('y.yaml', MATRIX),
      '--clusters',
      file('c.yaml', 'a: b\n'),
    );
    expect(badClusters.code).toBe(2);
  });
});

describe('directoryRepository', () => {
  it('lists the files of a checkout without .git or symbolic links, and refuses to leave it', () => {
    file('checkout/a/b.yaml', 'x: 1\n');
    file('checkout/.git/config', '[core]\n');
    file('checkout/.github/workflow.yaml', 'on: push\n');
    file('outside/secret.txt', 'secret\n');
    symlinkSync(join(dir, 'outside'), join(dir, 'checkout', 'linked-dir'));
    symlinkSync(join(dir, 'outside', 'secret.txt'), join(dir, 'checkout', 'a', 'linked.txt'));
    const repo = directoryRepository(join(dir, 'checkout'));
    mkdirSync(join(dir, 'checkout', 'empty', 'nested'), { recursive: true });
    expect(repo.listFiles()).toEqual(['.github/workflow.yaml', 'a/b.yaml']);
    expect(repo.listDirectories?.()).toEqual(['.github', 'a', 'empty', 'empty/nested']);
    expect(repo.readFile('a/b.yaml')).toBe('x: 1\n');
    expect(() => repo.readFile('../outside/secret.txt')).toThrow(/outside the repository/);
    expect(() => repo.readFile('a/linked.txt')).toThrow(/symbolic link/);
    expect(() => repo.readFile('linked-dir/secret.txt')).toThrow(/symbolic link/);
  });
});

// The real executable, as acceptance suites call it (needs the build that `npm ci` / `npm run build` makes).
const bin = fileURLToPath(new URL('../../bin/flotilla.js', import.meta.url));
const built = existsSync(fileURLToPath(new URL('../../dist/commands/generate.command.js', import.meta.url)));

describe.skipIf(!built)('flotilla generate (spawned)', () => {
  const flotilla = (...args: string[]) =>
    spawnSync(process.execPath, [bin, 'generate', ...args], { encoding: 'utf8' });

  it('exits 0 with one JSON document on stdout', () => {
    const appset = file(
      'spawn-ok.yaml',
      `spec:
  generators: [{ list: { elements: [{ n: a }] } }]
  template: { metadata: { name: '{{n}}' }, spec: {} }
`,
    );
    const r = flotilla('-f', appset, '-o', 'json');
    expect(r.status).toBe(0);
    expect(r.stderr).toBe('');
    expect(JSON.parse(r.stdout)).toEqual({
      params: [{ n: 'a' }],
      targets: [
        { metadata: { name: 'a', finalizers: ['resources-finalizer.argocd.argoproj.io'] }, spec: {} },
      ],
    });
  });

  it('exits 1 with {"error"} on stdout, and 2 with a line on stderr', () => {
    const bad = file(
      'spawn-bad.yaml',
      `spec:
  generators: [{ plugin: {} }]
  template: { metadata: { name: x }, spec: {} }
`,
    );
    const failed = flotilla('-f', bad, '-o', 'json');
    expect(failed.status).toBe(1);
    expect(Object.keys(JSON.parse(failed.stdout) as object)).toEqual(['error']);

    const unreadable = flotilla('-f', join(dir, 'does-not-exist.yaml'), '-o', 'json');
    expect(unreadable.status).toBe(2);
    expect(unreadable.stdout).toBe('');
    expect(unreadable.stderr.trim().split('\n')).toHaveLength(1);
  });
});
