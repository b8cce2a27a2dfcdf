import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { deleteRedisKeys } from '../fleet/redis-server.js';
import { simpleGit } from 'simple-git';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { LocalFleet } from '../fleet/local-fleet.js';
import { type AppSetView, type ClusterView, type SyncRunView, type TargetView } from '../fleet/hub-client.js';
import { runInProcess, type CommandOutcome } from '../testing/run-in-process.js';
import { rowOf } from '../testing/stand-in-hub.js';
import { run as appsets } from './appsets.command.js';
import { run as clusters } from './clusters.command.js';
import { run as history } from './history.command.js';
import { run as targets } from './targets.command.js';

/**
 * The hub-backed commands against a real hub process (embedded PGlite, the test Redis under a
 * private prefix) with one simulated cluster and its agent, and a Git repository in a temp dir.
 * Needs the built hub and agent (`npx tsc -b apps/hub/tsconfig.app.json apps/agent/tsconfig.app.json`).
 */
/** The built CLI, for what only a process shows (Ctrl-C). */
const CLI_MAIN = join(import.meta.dirname, '../../dist/main.js');
const REDIS_URL = process.env['TEST_REDIS_URL'] ?? 'redis://127.0.0.1:6379';
const testdata = (name: string): string => readFileSync(new URL(`testdata/${name}`, import.meta.url), 'utf8');

describe('hub-backed commands against a real hub', () => {
  const work = mkdtempSync(join(tmpdir(), 'flotilla-cli-hub-'));
  const redisPrefix = `flotilla-cli-${randomBytes(4).toString('hex')}`;
  let fleet: LocalFleet;
  let hub: string[];
  let head: string;
  let cluster: string;
  let appSetFile: string;

  const cli = (command: (argv: string[]) => Promise<number>, ...argv: string[]): Promise<CommandOutcome> =>
    runInProcess(command, [...argv, ...hub]);
  const json = async <T>(command: (argv: string[]) => Promise<number>, ...argv: string[]): Promise<T> => {
    const r = await cli(command, ...argv, '-o', 'json');
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    return JSON.parse(r.out) as T;
  };

  beforeAll(async () => {
    const repoDir = join(work, 'repo');
    mkdirSync(join(repoDir, 'apps/web'), { recursive: true });
    writeFileSync(join(repoDir, 'apps/web/web.yaml'), testdata('web-manifests.yaml'));
    const git = simpleGit(repoDir);
    await git.init(['--initial-branch=main']);
    await git.addConfig('user.name', 'CLI spec').addConfig('user.email', 'cli@flotilla.local');
    await git.add('.').commit('web');
    head = (await git.revparse(['HEAD'])).trim();

    fleet = await LocalFleet.start({
      workDir: join(work, 'fleet'),
      clusters: 1,
      namePrefix: 'cli-',
      redisUrl: REDIS_URL,
      redisPrefix,
      pollSeconds: 1,
    });
    hub = ['--hub', fleet.hubUrl];
    cluster = fleet.clusters[0]!.name;
    appSetFile = join(work, 'appset-web.yaml');
    writeFileSync(
      appSetFile,
      testdata('appset-web.yaml')
        .replaceAll('REPO_URL', pathToFileURL(repoDir).toString())
        .replaceAll('CLUSTER', cluster),
    );
  }, 90_000);

  afterAll(async () => {
    await fleet?.stop();
    await deleteRedisKeys(REDIS_URL, redisPrefix);
    rmSync(work, { recursive: true, force: true });
  });

  it('adds a cluster: prints its bootstrap token, and get/list show it', async () => {
    const added = await cli(clusters, 'add', 'edge-1', '--label', 'env=prod', '--label', 'tier=edge');
    expect(added.code).toBe(0);
    expect(added.err).toBe('');
    const token = /^ {2}(\S+)$/m.exec(added.out)?.[1];
    expect(token).toMatch(/^flb_/);
    expect(added.out).toContain('Cluster edge-1 added.');
    expect(added.out).toContain(`FLOTILLA_HUB_URL=${fleet.hubUrl} FLOTILLA_CLUSTER_NAME=edge-1`);
    expect(added.out).toContain(`FLOTILLA_BOOTSTRAP_TOKEN=${token} flotilla-agent`);

    const got = await json<ClusterView>(clusters, 'get', 'edge-1');
    expect(got.name).toBe('edge-1');
    expect(got.labels).toEqual({ env: 'prod', tier: 'edge' });
    expect(got.registered).toBe(false);
    expect(got.targets).toEqual({ total: 0, synced: 0, outOfSync: 0, unknown: 0, healthy: 0, degraded: 0 });

    const table = await cli(clusters, 'get', 'edge-1');
    expect(table.out).toMatch(/^Name: +edge-1$/m);
    expect(table.out).toMatch(/^Labels: +env=prod,tier=edge$/m);
    expect(table.out).toMatch(/^Registered: +no$/m);

    const list = await cli(clusters);
    expect(list.code).toBe(0);
    const lines = list.out.trimEnd().split('\n');
    expect(lines[0]?.split(/ {3,}/)).toEqual([
      'NAME',
      'REGISTERED',
      'AGENT',
      'LAST SEEN',
      'TARGETS',
      'SYNCED',
      'HEALTHY',
      'LABELS',
    ]);
    expect(lines.slice(1).map((l) => l.split(/\s+/)[0])).toEqual([cluster, 'edge-1'].sort());
    const edge = lines.find((l) => l.startsWith('edge-1'))?.split(/\s+/);
    expect(edge).toEqual(['edge-1', 'no', '-', '-', '0', '0', '0', 'env=prod,tier=edge']);

    // -o wide: the real hub's answer with the columns to debug by; the edge cluster is the second row.
    const wide = await cli(clusters, 'list', '-o', 'wide');
    expect(wide.code).toBe(0);
    const edgeRow = wide.out
      .trimEnd()
      .split('\n')
      .findIndex((l) => l.startsWith('edge-1'));
    expect(rowOf(wide.out, edgeRow)).toEqual({
      NAME: 'edge-1',
      SERVER: '-',
      REGISTERED: 'no',
      AGENT: '-',
      FEATURES: '-',
      'KUBE VERSION': '-',
      'LAST SEEN': '-',
      TARGETS: '0',
      SYNCED: '0',
      'OUT OF SYNC': '0',
      HEALTHY: '0',
      DEGRADED: '0',
      LABELS: 'env=prod,tier=edge',
    });

    const again = await cli(clusters, 'add', 'edge-1');
    expect(again.code).toBe(1);
    expect(again.out).toBe('');
    expect(again.err.trimEnd().split('\n')).toHaveLength(1);
    expect(again.err).toContain(`POST ${fleet.hubUrl}/api/v1/clusters → 409 already-exists:`);
    expect(again.err).toContain('(at name)');
  });

  it('applies an ApplicationSet from YAML, then targets and history follow the agent', async () => {
    const applied = await cli(appsets, 'apply', '-f', appSetFile, '--wait');
    expect(applied.err).toBe('');
    expect(applied.code).toBe(0);
    expect(applied.out).toBe('ApplicationSet web created; status Ready, 1 targets\n');

    const reapplied = await json<{ result: string; appSet: AppSetView }>(appsets, 'apply', '-f', appSetFile);
    expect(reapplied.result).toBe('updated');
    expect(reapplied.appSet.name).toBe('web');
    expect(reapplied.appSet.status).toBe('Pending');

    await expect
      .poll(
        async () =>
          (await json<TargetView[]>(targets, '--appset', 'web')).map((t) => [
            t.cluster,
            t.name,
            t.desiredRevision,
            t.syncStatus,
            t.health,
            t.reason,
          ]),
        { timeout: 45_000, interval: 500 },
      )
      .toEqual([[cluster, `web-${cluster}`, head, 'Synced', 'Healthy', null]]);

    const table = await cli(targets, '--cluster', cluster);
    expect(table.code).toBe(0);
    const [header, row, ...rest] = table.out.trimEnd().split('\n');
    expect(header?.split(/ {3,}/)).toEqual([
      'CLUSTER',
      'TARGET',
      'REVISION',
      'SYNC',
      'HEALTH',
      'LAST SYNC',
      'REASON',
    ]);
    const cells = row?.split(/\s+/);
    expect(cells?.slice(0, 5)).toEqual([cluster, `web-${cluster}`, head.slice(0, 7), 'Synced', 'Healthy']);
    expect(cells?.at(-1)).toBe('-');
    expect(rest).toEqual([]);
    expect(await json<TargetView[]>(targets, '--cluster', 'edge-1')).toEqual([]);

    const wide = await cli(targets, '--cluster', cluster, '-o', 'wide');
    expect(wide.code).toBe(0);
    expect(rowOf(wide.out)).toMatchObject({
      CLUSTER: cluster,
      TARGET: `web-${cluster}`,
      APPSET: 'web',
      NAMESPACE: 'web',
      REVISION: head,
      RELEASED: head,
      SYNCED: head,
      PIN: '-',
      SYNC: 'Synced',
      HEALTH: 'Healthy',
      STALE: '-',
      REASON: '-',
    });

    const runs = await json<SyncRunView[]>(history, '--target', `web-${cluster}`);
    expect(runs.length).toBeGreaterThan(0);
    const newest = runs[0]!;
    expect(newest.target).toBe(`web-${cluster}`);
    expect(newest.cluster).toBe(cluster);
    expect(newest.revision).toBe(head);
    expect(newest.outcome).toBe('Succeeded');

    const ndjson = await cli(history, '--cluster', cluster, '--all', '--ndjson');
    expect(ndjson.code).toBe(0);
    const lines = ndjson.out.trimEnd().split('\n');
    expect(lines.map((l) => (JSON.parse(l) as SyncRunView).id)).toEqual(
      (await json<SyncRunView[]>(history, '--cluster', cluster, '--all')).map((r) => r.id),
    );
    expect((await json<SyncRunView[]>(history, '--limit', '1')).map((r) => r.id)).toEqual([newest.id]);

    const historyTable = await cli(history, '--target', `web-${cluster}`, '--limit', '1');
    const [h, first] = historyTable.out.trimEnd().split('\n');
    expect(h?.split(/ {3,}/)).toEqual([
      'STARTED',
      'CLUSTER',
      'TARGET',
      'REVISION',
      'TRIGGER',
      'OUTCOME',
      'DURATION',
      'MESSAGE',
    ]);
    expect(first?.split(/\s+/).slice(1, 4)).toEqual([cluster, `web-${cluster}`, head.slice(0, 7)]);
  }, 60_000);

  it('--watch shows targets and history as they change, bounded by --timeout, and stops on Ctrl-C with exit 0', async () => {
    // -o json --watch prints one line per answer that changed; --timeout ends it with exit 0.
    const watched = await cli(history, '--watch', '--timeout', '3', '--limit', '5', '-o', 'json');
    expect(watched.err).toBe('');
    expect(watched.code).toBe(0);
    const answers = watched.out.trimEnd().split('\n');
    expect(answers.length).toBeGreaterThanOrEqual(1);
    for (const answer of answers) expect((JSON.parse(answer) as SyncRunView[]).length).toBeGreaterThan(0);

    // As a person runs it: the built CLI, interrupted once it has shown the table.
    const child = spawn(process.execPath, [CLI_MAIN, 'targets', '--watch', ...hub], {
      env: { ...process.env, FLOTILLA_CONFIG: join(work, 'no-config.yaml') },
    });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    await expect
      .poll(() => out, { timeout: 30_000 })
      .toMatch(new RegExp(`^CLUSTER +TARGET[^\\n]*\\n${cluster} `));
    child.kill('SIGINT');
    expect(await exited).toBe(0);

    const refused = await cli(targets, 'delete', 'x', '--watch');
    expect(refused.code).toBe(2);
    expect(refused.err).toContain('--watch and --timeout apply to the listing');
    expect((await cli(history, '--watch', '--all')).err).toContain('--watch and --all exclude each other');
    expect((await cli(targets, '--timeout', '3')).err).toContain('--timeout applies with --watch');
  }, 90_000);

  it('shows, lists and deletes ApplicationSets; a refused document names the field', async () => {
    const yamlOut = await cli(appsets, 'get', 'web', '-o', 'yaml');
    expect(yamlOut.code).toBe(0);
    const view = parseYaml(yamlOut.out) as AppSetView;
    expect(view.name).toBe('web');
    expect(view.repoUrls).toEqual([expect.stringMatching(/^file:\/\//)]);

    // A hard refresh names the repository it fetches; its text says what was queued.
    const refreshed = await json<{ hard: boolean; repositories: { url: string }[] }>(
      appsets,
      'refresh',
      'web',
      '--hard',
      '--reason',
      'webhook missed',
    );
    expect(refreshed).toMatchObject({ hard: true, repositories: [{ url: view.repoUrls[0] }] });
    const refreshText = await cli(appsets, 'refresh', 'web');
    expect([refreshText.code, refreshText.out.trim()]).toEqual([0, 'ApplicationSet web: evaluation queued.']);

    const list = await cli(appsets, 'list');
    const [header, row] = list.out.trimEnd().split('\n');
    expect(header?.split(/ {3,}/)).toEqual([
      'NAME',
      'STATUS',
      'TARGETS',
      'EXPANDED',
      'REPOSITORIES',
      'ERROR',
    ]);
    expect(row?.split(/\s+/).slice(0, 3)).toEqual(['web', view.status, '1']);

    const badFile = join(work, 'broken.yaml');
    writeFileSync(badFile, testdata('appset-unknown-generator.yaml'));
    const refused = await cli(appsets, 'apply', '-f', badFile);
    expect(refused.code).toBe(1);
    expect(refused.err).toMatch(
      new RegExp(
        `^flotilla appsets: POST ${fleet.hubUrl}/api/v1/appsets → 400 unknown-generator: .*\\(at spec\\.generators`,
      ),
    );
    expect(await json<AppSetView[]>(appsets)).toHaveLength(1);

    // Accepted, but its expansion fails (no such directory at the commit): --wait reports it, exit 1.
    const missingFile = join(work, 'missing.yaml');
    writeFileSync(
      missingFile,
      readFileSync(appSetFile, 'utf8').replace('name: web', 'name: missing').replace('apps/web', 'apps/none'),
    );
    const failed = await cli(appsets, 'apply', '-f', missingFile, '--wait');
    expect(failed.err).toBe('');
    expect(failed.code).toBe(1);
    const [summary, error, ...more] = failed.out.trimEnd().split('\n');
    expect(summary).toBe('ApplicationSet missing created; status Error, 0 targets');
    expect(error).toMatch(/^error: [a-z-]+: .*apps\/none/);
    expect(more).toEqual([]);
    expect((await cli(appsets, 'delete', 'missing')).code).toBe(0);

    const deleted = await cli(appsets, 'delete', 'web');
    expect(deleted).toEqual({ code: 0, out: 'ApplicationSet web deleted; its targets go.\n', err: '' });
    expect(await json<TargetView[]>(targets)).toEqual([]);
    const gone = await cli(appsets, 'get', 'web');
    expect(gone.code).toBe(1);
    expect(gone.err).toBe(
      `flotilla appsets: GET ${fleet.hubUrl}/api/v1/appsets/web → 404 not-found: appset "web" does not exist\n`,
    );
  });

  it('revokes a cluster credential and issues a new bootstrap token', async () => {
    expect((await json<ClusterView>(clusters, 'get', cluster)).registered).toBe(true);
    const revoked = await json<ClusterView>(clusters, 'revoke', cluster);
    expect(revoked.name).toBe(cluster);
    expect(revoked.registered).toBe(false);
    expect((await json<ClusterView>(clusters, 'get', cluster)).registered).toBe(false);

    const token = await cli(clusters, 'token', cluster);
    expect(token.code).toBe(0);
    expect(token.out).toContain(`Issued a new bootstrap token for cluster ${cluster}.`);
    expect(token.out).toMatch(/FLOTILLA_BOOTSTRAP_TOKEN=flb_\S+ flotilla-agent/);
    const missing = await cli(clusters, 'token', 'nowhere');
    expect(missing.code).toBe(1);
    expect(missing.err).toContain(
      `POST ${fleet.hubUrl}/api/v1/clusters/nowhere/bootstrap-tokens → 404 not-found`,
    );
  });
});
