import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { planReportSchema } from '@flotilla/plan';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalFleet } from '../fleet/local-fleet.js';
import { deleteRedisKeys } from '../fleet/redis-server.js';
import { runInProcess } from '../testing/run-in-process.js';
import { gitIn, writeFiles } from '../testing/test-git.js';
import { run } from './plan.command.js';

/**
 * `flotilla plan --hub` against a real hub process (embedded PGlite, the test Redis under a private
 * prefix) following a fleet repository in a temp dir: the hub's answer is the offline plan of the
 * same revisions with the same inventory. Needs the built hub (`npx tsc -b apps/hub/tsconfig.app.json`).
 */

const REDIS_URL = process.env['TEST_REDIS_URL'] ?? 'redis://127.0.0.1:6379';
const AT = '2026-03-02T10:00:00Z';
const CLUSTERS = [
  { name: 'eu-1', server: '', labels: { tier: 'frontend', env: 'prod' }, annotations: {} },
  { name: 'eu-2', server: '', labels: { tier: 'frontend', env: 'staging' }, annotations: {} },
  { name: 'db-1', server: '', labels: { tier: 'backend', env: 'prod' }, annotations: {} },
];

const deployment = (image: string) => `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
        - name: web
          image: ${image}
`;

const appSet = (repoUrl: string) => `apiVersion: flotilla.dev/v1alpha1
kind: ApplicationSet
metadata:
  name: web
spec:
  generators:
    - clusters:
        selector:
          matchLabels:
            tier: frontend
  rollout:
    steps:
      - name: canary
        selector:
          matchLabels:
            env: staging
      - name: production
        selector: {}
  template:
    metadata:
      name: 'web-{{name}}'
    spec:
      source:
        repoURL: ${repoUrl}
        targetRevision: main
        path: apps/web
      destination:
        name: '{{name}}'
        namespace: web
`;

describe('flotilla plan --hub', () => {
  const work = mkdtempSync(join(tmpdir(), 'flotilla-plan-hub-'));
  const repo = join(work, 'fleet-repo');
  const repoUrl = pathToFileURL(repo).toString();
  const clustersFile = join(work, 'clusters.json');
  const redisPrefix = `flotilla-plan-hub-${randomBytes(4).toString('hex')}`;
  let fleet: LocalFleet;
  let hub: string[];

  const git = (...args: string[]): string => gitIn(repo, ...args);
  const commit = (files: Record<string, string>, message: string): void => {
    writeFiles(repo, files);
    git('add', '-A');
    git('commit', '-q', '-m', message);
  };

  beforeAll(async () => {
    mkdirSync(repo);
    git('init', '-q', '--initial-branch=main');
    commit({ 'apps/web/deployment.yaml': deployment('web:1.0'), 'fleet/web.yaml': appSet(repoUrl) }, 'web');
    git('checkout', '-q', '-b', 'bump');
    commit({ 'apps/web/deployment.yaml': deployment('web:1.1') }, 'bump web');
    git('checkout', '-q', 'main');
    writeFileSync(clustersFile, JSON.stringify(CLUSTERS));

    fleet = await LocalFleet.start({
      workDir: join(work, 'fleet'),
      clusters: 0,
      redisUrl: REDIS_URL,
      redisPrefix,
      pollSeconds: 1,
      hubEnv: { FLEET_REPOSITORIES: `${repoUrl}#main:fleet` },
    });
    hub = ['--hub', fleet.hubUrl];
    for (const c of CLUSTERS) await fleet.api.registerCluster(c.name, c.labels);
  }, 120_000);

  afterAll(async () => {
    await fleet?.stop();
    await deleteRedisKeys(REDIS_URL, redisPrefix);
    rmSync(work, { recursive: true, force: true });
  });

  it('prints the plan the hub computes, the same JSON as the offline plan of those revisions', async () => {
    const atHub = await runInProcess(run, [
      ...hub,
      '--base',
      'main',
      '--head',
      'bump',
      '--at',
      AT,
      '-o',
      'json',
    ]);
    expect(atHub.err).toBe('');
    expect(atHub.code).toBe(0);
    const report = planReportSchema.parse(JSON.parse(atHub.out));
    expect(report.appSets[0]?.targets.map((t) => `${t.name} ${t.change} ${t.step?.name ?? '-'}`)).toEqual([
      'web-eu-1 changed production',
      'web-eu-2 changed canary',
    ]);

    const offline = await runInProcess(run, [
      ...['--fleet', repo, '--path', 'fleet', '--repo', `${repoUrl}=${repo}`, '--clusters', clustersFile],
      ...['--base', 'main', '--head', 'bump', '--at', AT, '-o', 'json'],
    ]);
    expect(offline.code).toBe(0);
    expect(report).toEqual(JSON.parse(offline.out));
  }, 60_000);

  it('prints markdown and a table, and fails with --exit-code when something changes', async () => {
    const markdown = await runInProcess(run, [...hub, '--base', 'main', '--head', 'bump', '-o', 'markdown']);
    expect(markdown.code).toBe(0);
    expect(markdown.out).toContain('web-eu-2');
    const table = await runInProcess(run, [...hub, '--base', 'main', '--head', 'bump', '--exit-code']);
    expect(table.code).toBe(1);
    expect(table.out).toContain('web-eu-1');
    const same = await runInProcess(run, [...hub, '--base', 'main', '--head', 'main', '--exit-code']);
    expect(same.code).toBe(0);
  }, 60_000);

  it('says what the hub refused, naming the field, with exit 1; a usage error is exit 2', async () => {
    const unknown = await runInProcess(run, [...hub, '--base', 'main', '--head', 'nope', '-o', 'json']);
    expect(unknown.code).toBe(1);
    const { error } = JSON.parse(unknown.out) as { error: string };
    expect(error).toContain('404 unknown-revision');
    expect(error).toContain('(at head)');

    const offlineFlag = await runInProcess(run, [
      ...hub,
      '--base',
      'main',
      '--head',
      'bump',
      '--clusters',
      clustersFile,
    ]);
    expect(offlineFlag.code).toBe(2);
    expect(offlineFlag.err).toContain('--clusters is for an offline plan');
    const noHead = await runInProcess(run, ['--base', 'main', '--hub', fleet.hubUrl]);
    expect(noHead.code).toBe(2);
    expect(noHead.err).toContain('--hub needs --base REV and --head REV');
    const tokenOffline = await runInProcess(run, [
      '--base',
      'main',
      '--token',
      't',
      '--clusters',
      clustersFile,
    ]);
    expect(tokenOffline.code).toBe(2);
    expect(tokenOffline.err).toContain('--token goes with --hub');
  }, 60_000);
});
