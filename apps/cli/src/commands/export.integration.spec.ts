import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { simpleGit } from 'simple-git';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validateFleetDirectory } from '@flotilla/fleet-config';
import { deleteRedisKeys } from '../fleet/redis-server.js';
import { LocalFleet } from '../fleet/local-fleet.js';
import { waitFor } from '../fleet/wait-for.js';
import { runInProcess } from '../testing/run-in-process.js';
import { run as exportCommand } from './export.command.js';
import { run as fleetSources } from './fleet-sources.command.js';

/**
 * `flotilla export` against a real hub process (embedded PGlite, the test Redis under a private
 * prefix): objects created through the API come out as fleet-config YAML that `validate` accepts;
 * objects a fleet repository manages stay out. Needs the built hub (`npx tsc -b apps/hub/tsconfig.app.json`).
 */
const REDIS_URL = process.env['TEST_REDIS_URL'] ?? 'redis://127.0.0.1:6379';

async function gitRepo(dir: string, files: Record<string, string>): Promise<string> {
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(join(dir, path, '..'), { recursive: true });
    writeFileSync(join(dir, path), content);
  }
  const git = simpleGit(dir);
  await git.init(['--initial-branch=main']);
  await git.addConfig('user.name', 'Export spec').addConfig('user.email', 'export@flotilla.local');
  await git.add('.').commit('initial');
  return pathToFileURL(dir).toString();
}

describe('flotilla export', () => {
  const work = mkdtempSync(join(tmpdir(), 'flotilla-cli-export-'));
  const redisPrefix = `flotilla-cli-export-${randomBytes(4).toString('hex')}`;
  let fleet: LocalFleet;
  let appRepo: string;

  beforeAll(async () => {
    appRepo = await gitRepo(join(work, 'app'), {
      'web/config.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n',
    });
    const fleetRepo = await gitRepo(join(work, 'fleet-repo'), {
      'platform.yaml':
        'apiVersion: flotilla.dev/v1alpha1\nkind: Project\nmetadata:\n  name: platform\nspec:\n  sourceRepos: ["*"]\n',
    });
    fleet = await LocalFleet.start({
      workDir: join(work, 'fleet'),
      clusters: 0,
      redisUrl: REDIS_URL,
      redisPrefix,
      pollSeconds: 1,
    });
    const api = fleet.api;
    await api.request('POST', '/api/v1/clusters', { name: 'eu-1', labels: { env: 'prod' } });
    await api.request('POST', '/api/v1/projects', {
      apiVersion: 'flotilla.dev/v1alpha1',
      kind: 'Project',
      metadata: { name: 'team-a' },
      spec: { sourceRepos: [appRepo], destinations: [{ cluster: '*', namespace: 'web' }] },
    });
    await api.request('POST', '/api/v1/windows', {
      name: 'friday-freeze',
      kind: 'deny',
      schedule: '0 16 * * 5',
      duration: '64h',
      timeZone: 'Europe/Paris',
      description: 'no changes over the weekend',
    });
    await api.request('POST', '/api/v1/appsets', {
      apiVersion: 'flotilla.dev/v1alpha1',
      kind: 'ApplicationSet',
      metadata: { name: 'web' },
      spec: {
        project: 'team-a',
        generators: [{ clusters: { selector: { matchLabels: { env: 'prod' } } } }],
        template: {
          metadata: { name: 'web-{{name}}' },
          spec: {
            source: { repoURL: appRepo, targetRevision: 'main', path: 'web' },
            destination: { name: '{{name}}', namespace: 'web' },
          },
        },
      },
    });
    await api.request('POST', '/api/v1/fleet-sources', { repoUrl: fleetRepo });
    // The fleet source's Project arrives once the hub has fetched and reconciled the repository.
    await waitFor(
      'the fleet source to be reconciled',
      async () => {
        const projects = await api.request<{ name: string }[]>('GET', '/api/v1/projects');
        return projects.some((p) => p.name === 'platform') ? true : undefined;
      },
      { timeoutMs: 60_000 },
    );
  }, 120_000);

  afterAll(async () => {
    await fleet?.stop();
    await deleteRedisKeys(REDIS_URL, redisPrefix);
    rmSync(work, { recursive: true, force: true });
  });

  it('prints the API-created objects as fleet-config YAML that validates, leaving Git-managed ones out', async () => {
    const r = await runInProcess(exportCommand, ['--hub', fleet.hubUrl]);
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    const validation = validateFleetDirectory([{ path: 'exported.yaml', content: r.out }]);
    expect(validation.errors).toEqual([]);
    expect(validation.objects.map((o) => `${o.kind}/${o.name}`)).toEqual([
      'Project/team-a',
      'SyncWindow/friday-freeze',
      'ClusterGroup/cluster-eu-1',
      'ApplicationSet/web',
    ]);
    const window = validation.objects.find((o) => o.kind === 'SyncWindow');
    expect(window?.object).toMatchObject({
      metadata: { name: 'friday-freeze', annotations: { description: 'no changes over the weekend' } },
      spec: { kind: 'deny', schedule: '0 16 * * 5', duration: '64h', timeZone: 'Europe/Paris' },
    });

    const all = await runInProcess(exportCommand, ['--hub', fleet.hubUrl, '--include-git', '-o', 'json']);
    const names = (JSON.parse(all.out) as { metadata: { name: string } }[]).map((o) => o.metadata.name);
    expect(names).toContain('platform');
  });

  it('writes one file per object with --dir, a directory `flotilla validate` accepts', async () => {
    const dir = join(work, 'exported');
    const r = await runInProcess(exportCommand, ['--hub', fleet.hubUrl, '--dir', dir]);
    expect(r.code).toBe(0);
    expect(r.out).toBe(`wrote 4 object(s) under ${dir}\n`);
    const files = [
      'appsets/web.yaml',
      'clusters/eu-1.yaml',
      'projects/team-a.yaml',
      'windows/friday-freeze.yaml',
    ];
    expect(
      readdirSync(dir, { recursive: true })
        .filter((f) => String(f).endsWith('.yaml'))
        .sort(),
    ).toEqual(files);
    const validation = validateFleetDirectory(
      files.map((path) => ({ path, content: readFileSync(join(dir, path), 'utf8') })),
    );
    expect(validation.errors).toEqual([]);
  });

  it('lists and shows the fleet source: status, applied commit and author, objects with their files', async () => {
    const list = await runInProcess(fleetSources, ['--hub', fleet.hubUrl, '-o', 'json']);
    expect(list.code).toBe(0);
    const [source] = JSON.parse(list.out) as { id: string; status: string }[];
    expect(source?.status).toBe('Ready');
    const show = await runInProcess(fleetSources, ['show', source?.id ?? '', '--hub', fleet.hubUrl]);
    expect(show.code).toBe(0);
    expect(show.out).toMatch(/^Status: +Ready$/m);
    expect(show.out).toMatch(/^Applied: +[0-9a-f]{40} by Export spec <export@flotilla\.local>$/m);
    expect(show.out).toMatch(/^Project +platform +platform\.yaml +-$/m);
    const missing = await runInProcess(fleetSources, ['show', 'nope', '--hub', fleet.hubUrl]);
    expect(missing.code).toBe(1);
    expect(missing.err).toContain('fleet source "nope" does not exist');
  });
});
