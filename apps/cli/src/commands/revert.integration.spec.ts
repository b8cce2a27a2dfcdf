import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runInProcess } from '../testing/run-in-process.js';
import { run, type RevertReport } from './revert.command.js';

// A real Git repository holding a fleet and its app, a bad commit among unrelated ones, and
// `flotilla revert` writing the revert in that checkout: the commits that changed the renders are
// found by rendering every commit of the range with the hub's code.

const REPO_URL = 'https://git.example/platform/fleet.git';

let root: string;
let repo: string;
let clustersFile: string;
let good: string;

function git(...args: string[]): string {
  const r = spawnSync('git', ['-C', repo, ...args], {
    encoding: 'utf8',
    env: {
      ...process.env,
      GIT_AUTHOR_NAME: 'Revert Test',
      GIT_AUTHOR_EMAIL: 'revert@example.com',
      GIT_COMMITTER_NAME: 'Revert Test',
      GIT_COMMITTER_EMAIL: 'revert@example.com',
    },
  });
  if (r.status !== 0) throw new Error(`git ${args.join(' ')}: ${r.stderr}`);
  return r.stdout.trim();
}

function write(path: string, text: string): void {
  const full = join(repo, path);
  mkdirSync(dirname(full), { recursive: true });
  writeFileSync(full, text);
}

function commit(message: string, files: Record<string, string>): string {
  for (const [path, text] of Object.entries(files)) write(path, text);
  git('add', '-A');
  git('commit', '-q', '-m', message);
  return git('rev-parse', 'HEAD');
}

const deployment = (image: string, replicas: number) => `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: ${replicas}
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: '${image}'}]
`;

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'flotilla-revert-spec-'));
  repo = join(root, 'repo');
  mkdirSync(repo);
  clustersFile = join(root, 'clusters.json');
  writeFileSync(
    clustersFile,
    JSON.stringify([
      { name: 'prod-1', server: 'https://prod-1.example:6443', labels: { env: 'prod' } },
      { name: 'staging-1', server: 'https://staging-1.example:6443', labels: { env: 'staging' } },
    ]),
  );
  git('init', '-q', '-b', 'main');
  good = commit('good', {
    'fleet/web.yaml': `apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: web}
spec:
  generators: [{clusters: {}}]
  template:
    metadata: {name: 'web-{{name}}'}
    spec:
      project: default
      source: {repoURL: '${REPO_URL}', targetRevision: HEAD, path: 'apps/web/{{metadata.labels.env}}'}
      destination: {name: '{{name}}', namespace: web}
`,
    'apps/web/prod/deployment.yaml': deployment('registry.example.com/web:1.0', 3),
    'apps/web/staging/deployment.yaml': deployment('registry.example.com/web:1.0', 1),
  });
});

afterEach(() => {
  rmSync(root, { recursive: true, force: true });
});

const revert = (...extra: string[]) =>
  runInProcess(run, [
    '--fleet',
    repo,
    '--path',
    'fleet',
    '--repo',
    `${REPO_URL}=${repo}`,
    '--clusters',
    clustersFile,
    '--to',
    good,
    ...extra,
  ]);

describe('flotilla revert', () => {
  it('reverts only the commits that changed what the target renders, and restores it', async () => {
    const bad = commit('web 2.0-broken on prod', {
      'apps/web/prod/deployment.yaml': deployment('registry.example.com/web:2.0-broken', 3),
    });
    commit('docs', { 'README.md': 'unrelated\n' });
    const staging = commit('staging replicas', {
      'apps/web/staging/deployment.yaml': deployment('registry.example.com/web:1.0', 2),
    });

    const dry = await revert('--target', 'web-prod-1', '--dry-run', '-o', 'json');
    expect(dry.code).toBe(0);
    const planned = JSON.parse(dry.out) as RevertReport;
    expect(planned).toMatchObject({ appSet: 'web', target: 'web-prod-1', revert: null });
    expect(planned.commits).toEqual([{ commit: bad, subject: 'web 2.0-broken on prod' }]);
    expect(git('rev-parse', 'HEAD')).toBe(staging);

    const done = await revert('--target', 'web-prod-1', '-o', 'json');
    expect(done.code).toBe(0);
    const report = JSON.parse(done.out) as RevertReport;
    expect(report.restores).toBe(true);
    expect(report.revert).toBe(git('rev-parse', 'HEAD'));
    expect(git('log', '-1', '--format=%P')).toBe(staging);
    expect(git('log', '-1', '--format=%B')).toContain(`Reverts ${bad.slice(0, 12)} web 2.0-broken on prod`);
    expect(readFileSync(join(repo, 'apps/web/prod/deployment.yaml'), 'utf8')).toBe(
      deployment('registry.example.com/web:1.0', 3),
    );
    // The staging change is not the target's: it stays.
    expect(readFileSync(join(repo, 'apps/web/staging/deployment.yaml'), 'utf8')).toContain('replicas: 2');

    const again = await revert('--target', 'web-prod-1');
    expect(again.code).toBe(0);
    expect(again.out).toContain('nothing to revert');
  });

  it('reverts every commit that changed the appset, the appset document included', async () => {
    const widen = commit('prod replicas', {
      'apps/web/prod/deployment.yaml': deployment('registry.example.com/web:1.0', 5),
    });
    const namespace = commit('namespace', {
      'fleet/web.yaml': readFileSync(join(repo, 'fleet/web.yaml'), 'utf8').replace(
        'namespace: web',
        'namespace: web2',
      ),
    });
    const out = await revert('--appset', 'web', '-o', 'json');
    expect(out.code).toBe(0);
    const report = JSON.parse(out.out) as RevertReport;
    expect(report.commits.map((c) => c.commit)).toEqual([widen, namespace]);
    expect(report.restores).toBe(true);
    expect(git('status', '--porcelain')).toBe('');
  });

  it('writes nothing when the revert conflicts, and says which files', async () => {
    commit('bad', { 'apps/web/prod/deployment.yaml': deployment('registry.example.com/web:2.0', 3) });
    // A later commit comments the line the bad one changed: the render stays, the revert conflicts.
    const head = commit('comment', {
      'apps/web/prod/deployment.yaml': deployment('registry.example.com/web:2.0', 3).replace(
        "web:2.0'}]",
        "web:2.0'}] # reviewed",
      ),
    });
    const out = await revert('--target', 'web-prod-1', '-o', 'json');
    expect(out.code).toBe(1);
    const { error } = JSON.parse(out.out) as { error: string };
    expect(error).toContain('does not apply cleanly (conflicts in apps/web/prod/deployment.yaml)');
    expect(git('rev-parse', 'HEAD')).toBe(head);
    expect(git('status', '--porcelain')).toBe('');
  });

  it.each([
    { name: 'neither --appset nor --target', argv: ['--dry-run'], err: 'one of --appset A or --target T' },
    {
      name: 'an unknown revision',
      argv: ['--appset', 'web', '--to', 'nope'],
      err: '--to nope: no such revision',
    },
  ])('refuses $name with exit 2', async ({ argv, err }) => {
    const out = await revert(...argv);
    expect(out.code).toBe(2);
    expect(out.err).toContain(err);
  });

  it('refuses an appset that exists at neither revision', async () => {
    const out = await revert('--appset', 'nope', '-o', 'json');
    expect(out.code).toBe(1);
    expect((JSON.parse(out.out) as { error: string }).error).toContain('there is no ApplicationSet nope');
  });
});
