import { stringify } from 'yaml';

/**
 * What `flotilla clusters add --print-manifests|--install` gives a cluster: the same objects as the
 * flotilla-agent Helm chart (deploy/charts/flotilla-agent) with its default values, for people who
 * join a cluster without Helm. test/deploy/clusters-add.spec.ts renders the chart with the real helm
 * and asserts the two agree, so a change to one that is not made to the other fails.
 * No credential of the cluster leaves it: the hub only ever sees the agent's pull requests.
 */

/** The chart's appVersion: the agent image the CLI installs. */
export const AGENT_IMAGE = 'ghcr.io/flotilla/flotilla-agent:0.1.0';
export const AGENT_NAMESPACE = 'flotilla-system';
/** The verbs the agent uses, and no other (deploy/README.md explains each). */
export const AGENT_VERBS = ['get', 'list', 'watch', 'create', 'patch', 'delete'];
/** Its verbs when it writes as the projects' ServiceAccounts: it only reads. */
export const IMPERSONATING_AGENT_VERBS = ['get', 'list', 'watch'];

export interface AgentInstall {
  cluster: string;
  /** The hub's URL as the cluster reaches it. */
  hubUrl: string;
  bootstrapToken: string;
  namespace?: string;
  image?: string;
  /**
   * A namespace-scoped agent (FLOTILLA_NAMESPACES): a Role and RoleBinding in each of these
   * (existing) namespaces instead of the ClusterRole, as the chart's `namespaces` value does.
   */
  namespaces?: string[];
  /**
   * Per-project impersonation (FLOTILLA_IMPERSONATE_NAMESPACE), as the chart's
   * `impersonation.projects`: a ServiceAccount flotilla-project-<project> each, which the agent may
   * impersonate (and no other), and the agent's own rules read-only.
   */
  impersonateProjects?: string[];
}

type K8sObject = Record<string, unknown> & {
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
};

/** FLOTILLA_STATUS_PORT in the Deployment: /healthz, /readyz (its probes) and /metrics. */
export const AGENT_STATUS_PORT = 8080;

/** The objects, in the order `kubectl apply` must meet them: the namespace first, then what lives in it. */
export function agentManifests(install: AgentInstall): K8sObject[] {
  const ns = install.namespace ?? AGENT_NAMESPACE;
  const labels = {
    'app.kubernetes.io/name': 'flotilla-agent',
    'app.kubernetes.io/instance': 'flotilla-agent',
  };
  const meta = (name: string) => ({ name, namespace: ns, labels });
  const projects =
    install.impersonateProjects && install.impersonateProjects.length > 0
      ? install.impersonateProjects
      : undefined;
  const rules = [
    { apiGroups: ['*'], resources: ['*'], verbs: projects ? IMPERSONATING_AGENT_VERBS : AGENT_VERBS },
    // As the chart: Events on what it syncs, whatever the rule above is narrowed to.
    { apiGroups: [''], resources: ['events'], verbs: ['create'] },
  ];
  const roleName = `flotilla-agent-${ns}`;
  const subjects = [{ kind: 'ServiceAccount', name: 'flotilla-agent', namespace: ns }];
  const limit = install.namespaces && install.namespaces.length > 0 ? install.namespaces : undefined;
  const rbac: K8sObject[] = limit
    ? [
        ...limit.map((namespace) => ({
          apiVersion: 'rbac.authorization.k8s.io/v1',
          kind: 'Role',
          metadata: { name: roleName, namespace, labels },
          rules,
        })),
        ...limit.map((namespace) => ({
          apiVersion: 'rbac.authorization.k8s.io/v1',
          kind: 'RoleBinding',
          metadata: { name: roleName, namespace, labels },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: roleName },
          subjects,
        })),
      ]
    : [
        {
          apiVersion: 'rbac.authorization.k8s.io/v1',
          kind: 'ClusterRole',
          metadata: { name: roleName, labels },
          rules,
        },
        {
          apiVersion: 'rbac.authorization.k8s.io/v1',
          kind: 'ClusterRoleBinding',
          metadata: { name: roleName, labels },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: roleName },
          subjects,
        },
      ];
  const impersonation: K8sObject[] = projects
    ? [
        ...projects.map((p) => ({
          apiVersion: 'v1',
          kind: 'ServiceAccount',
          metadata: meta(`flotilla-project-${p}`),
          automountServiceAccountToken: false,
        })),
        {
          apiVersion: 'rbac.authorization.k8s.io/v1',
          kind: 'Role',
          metadata: meta('flotilla-agent-impersonate'),
          rules: [
            {
              apiGroups: [''],
              resources: ['serviceaccounts'],
              verbs: ['impersonate'],
              resourceNames: projects.map((p) => `flotilla-project-${p}`),
            },
          ],
        },
        {
          apiVersion: 'rbac.authorization.k8s.io/v1',
          kind: 'RoleBinding',
          metadata: meta('flotilla-agent-impersonate'),
          roleRef: {
            apiGroup: 'rbac.authorization.k8s.io',
            kind: 'Role',
            name: 'flotilla-agent-impersonate',
          },
          subjects,
        },
      ]
    : [];
  return [
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } },
    {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: meta('flotilla-bootstrap'),
      type: 'Opaque',
      stringData: { token: install.bootstrapToken },
    },
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: meta('flotilla-agent') },
    ...rbac,
    ...impersonation,
    {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: meta('flotilla-agent-state'),
      spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
    },
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: meta('flotilla-agent'),
      spec: {
        // One agent per cluster: two would fight over the state volume and the credential.
        replicas: 1,
        strategy: { type: 'Recreate' },
        selector: { matchLabels: labels },
        template: {
          metadata: { labels },
          spec: {
            serviceAccountName: 'flotilla-agent',
            securityContext: {
              runAsNonRoot: true,
              runAsUser: 1000,
              runAsGroup: 1000,
              fsGroup: 1000,
              seccompProfile: { type: 'RuntimeDefault' },
            },
            containers: [
              {
                name: 'agent',
                image: install.image ?? AGENT_IMAGE,
                imagePullPolicy: 'IfNotPresent',
                env: [
                  { name: 'FLOTILLA_HUB_URL', value: install.hubUrl },
                  { name: 'FLOTILLA_CLUSTER_NAME', value: install.cluster },
                  { name: 'FLOTILLA_STATE_DIR', value: '/var/lib/flotilla-agent' },
                  { name: 'FLOTILLA_STATUS_PORT', value: String(AGENT_STATUS_PORT) },
                  ...(limit ? [{ name: 'FLOTILLA_NAMESPACES', value: limit.join(',') }] : []),
                  ...(projects ? [{ name: 'FLOTILLA_IMPERSONATE_NAMESPACE', value: ns }] : []),
                  { name: 'MALLOC_ARENA_MAX', value: '2' },
                  {
                    name: 'FLOTILLA_BOOTSTRAP_TOKEN',
                    valueFrom: { secretKeyRef: { name: 'flotilla-bootstrap', key: 'token', optional: true } },
                  },
                ],
                ports: [{ name: 'status', containerPort: AGENT_STATUS_PORT }],
                // Ready once it has a credential and assignments; a hub that is away keeps it ready.
                livenessProbe: {
                  httpGet: { path: '/healthz', port: 'status' },
                  periodSeconds: 20,
                  failureThreshold: 3,
                },
                readinessProbe: { httpGet: { path: '/readyz', port: 'status' }, periodSeconds: 10 },
                resources: { requests: { cpu: '50m', memory: '96Mi' }, limits: { memory: '256Mi' } },
                securityContext: {
                  allowPrivilegeEscalation: false,
                  readOnlyRootFilesystem: true,
                  capabilities: { drop: ['ALL'] },
                },
                volumeMounts: [
                  { name: 'state', mountPath: '/var/lib/flotilla-agent' },
                  { name: 'tmp', mountPath: '/tmp' },
                ],
              },
            ],
            volumes: [
              { name: 'state', persistentVolumeClaim: { claimName: 'flotilla-agent-state' } },
              { name: 'tmp', emptyDir: {} },
            ],
          },
        },
      },
    },
  ];
}

/** One multi-document YAML stream, as `kubectl apply -f -` reads it. */
export function agentManifestsYaml(install: AgentInstall): string {
  return agentManifests(install)
    .map((o) => stringify(o))
    .join('---\n');
}
