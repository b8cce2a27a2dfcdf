import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { bundleDigest } from '@flotilla/manifests';
import {
  ChartRepositoryClient,
  KustomizeProcess,
  renderApplication,
  type RenderEnvironment,
} from '@flotilla/manifests/node';
import { compilePolicySet, gateBundle, type PolicySet } from '@flotilla/policy';
import { figure } from '../stats.js';
import { type BenchFn } from '../types.js';

const TARGETS = 1_000;
/** Targets per timed sample: each sample is the mean cost of one target over this many. */
const BATCH = 50;
/** Every tenth target pulls its image from a registry the first policy forbids. */
const FORBIDDEN_EVERY = 10;

const RULES = (group: string, resource: string) =>
  `{resourceRules: [{apiGroups: ['${group}'], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [${resource}]}]}`;
const CONTAINERS = 'object.spec.template.spec.containers';

/** Ten policies of the kinds fleets write (registry, limits, labels, quantities, regex, params), each bound. */
const POLICIES: { name: string; match: string; expression: string; action: string; params?: boolean }[] = [
  {
    name: 'allowed-registry',
    match: RULES('apps', 'deployments'),
    expression: `${CONTAINERS}.all(c, c.image.startsWith('registry.example.com/'))`,
    action: 'Deny',
  },
  {
    name: 'replica-limit',
    match: RULES('apps', 'deployments'),
    expression: 'object.spec.replicas <= int(params.data.maxReplicas)',
    action: 'Deny',
    params: true,
  },
  {
    name: 'app-label',
    match: RULES('apps', 'deployments'),
    expression: "has(object.metadata.labels) && 'app' in object.metadata.labels",
    action: 'Deny',
  },
  {
    name: 'no-latest-tag',
    match: RULES('apps', 'deployments'),
    expression: `${CONTAINERS}.all(c, !c.image.endsWith(':latest'))`,
    action: 'Warn',
  },
  {
    name: 'limits-set',
    match: RULES('apps', 'deployments'),
    expression: `${CONTAINERS}.all(c, has(c.resources) && has(c.resources.limits) && has(c.resources.limits.memory))`,
    action: 'Deny',
  },
  {
    name: 'memory-cap',
    match: RULES('apps', 'deployments'),
    expression: `${CONTAINERS}.all(c, quantity(c.resources.limits.memory).compareTo(quantity('2Gi')) <= 0)`,
    action: 'Deny',
  },
  {
    name: 'name-format',
    match: RULES('apps', 'deployments'),
    expression: "object.metadata.name.matches('^[a-z][-a-z0-9]{0,40}$')",
    action: 'Deny',
  },
  {
    name: 'no-load-balancer',
    match: RULES('', 'services'),
    expression: "!has(object.spec.type) || object.spec.type != 'LoadBalancer'",
    action: 'Deny',
  },
  {
    name: 'small-config',
    match: RULES('', 'configmaps'),
    expression: '!has(object.data) || size(object.data) <= 50',
    action: 'Audit',
  },
  {
    name: 'port-range',
    match: RULES('', 'services'),
    expression: 'object.spec.ports.all(p, p.port > 0 && p.port < 65536)',
    action: 'Deny',
  },
];

function policyDocuments(): unknown[] {
  const yaml = POLICIES.map(
    (p) => `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: ${p.name}}
spec:
${p.params ? '  paramKind: {apiVersion: v1, kind: ConfigMap}\n' : ''}  matchConstraints: ${p.match}
  validations: [{expression: ${JSON.stringify(p.expression)}, message: ${p.name}}]
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: ${p.name}}
spec:
  policyName: ${p.name}
  validationActions: [${p.action}]
${p.params ? '  paramRef: {name: replica-limit, namespace: policy-params, parameterNotFoundAction: Deny}\n' : ''}`,
  ).join('---\n');
  return parseAllDocuments(yaml).map((d) => d.toJS() as unknown);
}

const PARAMS = [
  {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'replica-limit', namespace: 'policy-params' },
    data: { maxReplicas: '5' },
  },
];

/** Target i's app directory: a Deployment, a Service and a ConfigMap of its own (no two bundles alike). */
function writeApp(dir: string, i: number): void {
  mkdirSync(dir, { recursive: true });
  const registry = i % FORBIDDEN_EVERY === 0 ? 'docker.io/library' : 'registry.example.com';
  writeFileSync(
    join(dir, 'deployment.yaml'),
    `apiVersion: apps/v1
kind: Deployment
metadata: {name: web-${i}, labels: {app: web}}
spec:
  replicas: ${1 + (i % 4)}
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
        - name: web
          image: ${registry}/web:1.${i}.0
          resources: {limits: {memory: 512Mi, cpu: 500m}, requests: {memory: 256Mi}}
          ports: [{containerPort: 8080}]
        - name: sidecar
          image: registry.example.com/proxy:2.${i % 7}
          resources: {limits: {memory: 64Mi}}
`,
  );
  writeFileSync(
    join(dir, 'service.yaml'),
    `apiVersion: v1\nkind: Service\nmetadata: {name: web-${i}}\nspec:\n  selector: {app: web}\n  ports: [{port: 80, targetPort: 8080}]\n`,
  );
  const data = Array.from({ length: 10 }, (_, k) => `  key${k}: "value ${i}.${k}"`).join('\n');
  writeFileSync(
    join(dir, 'config.yaml'),
    `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web-${i}}\ndata:\n${data}\n`,
  );
}

function renderEnvironment(root: string): RenderEnvironment {
  return {
    helm: null,
    charts: new ChartRepositoryClient(),
    kustomize: new KustomizeProcess({
      binary: null,
      timeoutMs: 60_000,
      maxOutputBytes: 1 << 26,
      allowRemoteBases: false,
    }),
    repositories: { dirOf: () => root },
  };
}

/** Renders target i as the hub renders a plain-YAML source: its objects in bundle order, and their digest. */
async function renderTarget(env: RenderEnvironment, i: number): Promise<unknown[]> {
  const rendered = await renderApplication(
    {
      name: `web-${i}`,
      namespace: 'web',
      sources: [
        {
          kind: 'git',
          at: 'spec.source',
          repoURL: 'file:///bench',
          targetRevision: 'main',
          path: `apps/t${i}`,
        },
      ],
      capabilities: { kubeVersion: '1.32.0', apiVersions: [] },
    },
    env,
  );
  bundleDigest(rendered.objects);
  return rendered.objects;
}

/** Runs `each` over every target in batches; the mean milliseconds per target of each batch. */
async function perTarget(count: number, each: (i: number) => unknown): Promise<number[]> {
  const samples: number[] = [];
  for (let start = 0; start < count; start += BATCH) {
    const t0 = performance.now();
    for (let i = start; i < Math.min(start + BATCH, count); i++) await each(i);
    samples.push((performance.now() - t0) / Math.min(BATCH, count - start));
  }
  return samples;
}

/**
 * The release gate's cost at the hub: 10 policies judging 1,000 targets' bundles, each distinct (no
 * sharing to save work), with `gateBundle` as the gate calls it — against rendering the same targets
 * from plain YAML (read, parse, sort, digest: the cheapest render the hub does; Helm costs far more).
 * In one process, one core; the ratio is what the gate adds to a release's render.
 */
export const policyBench: BenchFn = async (ctx) => {
  const targets = ctx.quick ? 200 : TARGETS;
  const root = mkdtempSync(join(tmpdir(), 'flotilla-policy-bench-'));
  try {
    for (let i = 0; i < targets; i++) writeApp(join(root, 'apps', `t${i}`), i);
    const env = renderEnvironment(root);
    const documents = policyDocuments();
    const compileStart = performance.now();
    const { set, errors } = compilePolicySet(documents);
    const compileMs = performance.now() - compileStart;
    if (errors.length > 0)
      throw new Error(`the bench's policies do not compile: ${JSON.stringify(errors[0])}`);
    const bundles: unknown[][] = [];
    // One untimed pass over a few targets so the JIT has compiled both paths.
    for (let i = 0; i < 20; i++)
      gateBundle(set, await renderTarget(env, i), { namespace: 'web', params: PARAMS });

    const render = await perTarget(targets, async (i) => {
      bundles[i] = await renderTarget(env, i);
    });
    let denied = 0;
    const evaluate = await perTarget(targets, (i) => {
      if (!judge(set, bundles[i] ?? []).allowed) denied++;
    });
    const expected = Math.ceil(targets / FORBIDDEN_EVERY);
    if (denied !== expected)
      throw new Error(`expected ${expected} denied targets of ${targets}, the gate denied ${denied}`);
    ctx.progress(`${targets} targets: ${denied} denied; policies compiled in ${compileMs.toFixed(1)} ms`);
    const fleetSize = targets;
    return {
      figures: [
        figure({
          id: 'policy.evaluation-per-target',
          bench: 'policy',
          title: `admission policy evaluation per target, ${POLICIES.length} policies × ${targets} targets`,
          unit: 'ms',
          fleetSize,
          samples: evaluate,
          floor: {
            what: 'rendering the same target (plain YAML: read, parse, sort, digest)',
            samples: render,
          },
          notes: `each sample = the mean over ${BATCH} targets; every bundle distinct (a Deployment of two containers, a Service, a ConfigMap), ${denied} denied; the floor is the render; the set compiled once in ${compileMs.toFixed(1)} ms`,
          command: 'npm run bench -- --only policy',
        }),
        figure({
          id: 'policy.render-per-target',
          bench: 'policy',
          title: `plain-YAML render per target (the same ${targets} targets)`,
          unit: 'ms',
          fleetSize,
          samples: render,
          notes: `each sample = the mean over ${BATCH} targets`,
          command: 'npm run bench -- --only policy',
        }),
      ],
      series: [],
      remarks: [],
    };
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
};

function judge(set: PolicySet, objects: unknown[]) {
  return gateBundle(set, objects, { namespace: 'web', params: PARAMS });
}
