import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { planReportSchema, type PlanReport, type TargetPlan } from '@flotilla/plan';
import { runInProcess } from '../testing/run-in-process.js';
import { gitIn, writeFiles } from '../testing/test-git.js';
import { run } from './plan.command.js';

// Real Git repositories built here (a fleet and its applications in one repository, as a pull
// request changes them), the real Helm that npm ci unpacks, and the hub's own generators, render,
// windows, guard and policy code: `flotilla plan` between the base commit and each case's head.

const REPO_URL = 'https://git.example/platform/fleet.git';
const AT = '2026-03-02T10:00:00Z'; // a Monday

let root: string;
let repo: string;
let clustersFile: string;

function git(...args: string[]): string {
  return gitIn(repo, ...args);
}

function write(path: string, text: string): void {
  writeFiles(repo, { [path]: text });
}

const WEB_APPSET = (envs: string[]) => `apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata:
  name: web
spec:
  rolloutStrategy: canary-first
  generators:
    - clusters:
        selector:
          matchExpressions:
            - {key: env, operator: In, values: [${envs.join(', ')}]}
  template:
    metadata:
      name: 'web-{{name}}'
    spec:
      project: default
      source:
        repoURL: ${REPO_URL}
        targetRevision: HEAD
        path: apps/web
        helm:
          valueFiles: ['values-{{metadata.labels.env}}.yaml']
      destination:
        name: '{{name}}'
        namespace: web
`;

const API_APPSET = `apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata:
  name: api
spec:
  generators:
    - clusters: {}
  template:
    metadata:
      name: 'api-{{name}}'
    spec:
      project: default
      source:
        repoURL: ${REPO_URL}
        targetRevision: HEAD
        path: apps/api
      destination:
        name: '{{name}}'
        namespace: api
`;

const STRATEGY = `apiVersion: flotilla.dev/v1alpha1
kind: RolloutStrategy
metadata:
  name: canary-first
spec:
  steps:
    - name: canary
      selector: {matchLabels: {canary: 'true'}}
    - name: prod
      selector: {matchLabels: {env: prod}}
      maxUnavailable: 50%
    - name: everything-else
      selector: {}
`;

const REPLICA_POLICY = `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: replica-limit
spec:
  matchConstraints:
    resourceRules:
      - {apiGroups: [apps], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [deployments]}
  validations:
    - expression: 'object.spec.replicas <= 10'
      message: at most 10 replicas
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: replica-limit
spec:
  policyName: replica-limit
  validationActions: [Deny]
`;

function writeBase(): void {
  write('fleet/appsets/web.yaml', WEB_APPSET(['prod', 'staging']));
  write('fleet/appsets/api.yaml', API_APPSET);
  write('fleet/rollouts/canary-first.yaml', STRATEGY);
  write('fleet/policies/replica-limit.yaml', REPLICA_POLICY);
  write('apps/web/Chart.yaml', 'apiVersion: v2\nname: web\nversion: 1.0.0\n');
  write('apps/web/values.yaml', 'image: registry.example.com/web\ntag: "1.27"\nreplicas: 1\n');
  write('apps/web/values-prod.yaml', 'replicas: 3\n');
  write('apps/web/values-staging.yaml', 'replicas: 1\n');
  write('apps/web/values-dev.yaml', 'replicas: 1\n');
  write(
    'apps/web/templates/deployment.yaml',
    `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: {{ .Release.Namespace }}
spec:
  replicas: {{ .Values.replicas }}
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
        - name: web
          image: {{ .Values.image }}:{{ .Values.tag }}
`,
  );
  write(
    'apps/api/service.yaml',
    `apiVersion: v1
kind: Service
metadata: {name: api}
spec:
  selector: {app: api}
  ports: [{port: 80}]
`,
  );
}

interface PlanCase {
  name: string;
  /** Edits on top of the base commit, committed as the head. */
  change: () => void;
  check: (r: PlanReport) => void;
  exitCode?: number;
}

function target(r: PlanReport, appSet: string, name: string): TargetPlan {
  const t = r.appSets.find((a) => a.name === appSet)?.targets.find((x) => x.name === name);
  if (!t) throw new Error(`no planned target ${appSet}/${name}`);
  return t;
}

const CASES: PlanCase[] = [
  {
    name: 'an appset gaining a cluster',
    change: () => write('fleet/appsets/web.yaml', WEB_APPSET(['prod', 'staging', 'dev'])),
    check: (r) => {
      const web = r.appSets.find((a) => a.name === 'web');
      expect(web?.change).toBe('changed');
      expect(web?.targets.map((t) => [t.name, t.change])).toEqual([['web-dev-1', 'added']]);
      expect(web?.unchangedTargets).toBe(3);
      const added = target(r, 'web', 'web-dev-1');
      expect(added.cluster).toBe('dev-1');
      expect(added.step).toEqual({ index: 2, name: 'everything-else' });
      expect(added.objects.map((o) => [o.kind, o.name, o.change])).toEqual([['Deployment', 'web', 'added']]);
      expect(added.objects[0]?.diff).toContain('+++ head/apps.v1.Deployment.web.web');
      expect(r.fleet.objects.map((o) => [o.kind, o.name, o.change])).toEqual([
        ['ApplicationSet', 'web', 'changed'],
      ]);
      expect(r.fleet.objects[0]?.diff).toMatch(/^\+\s+- dev$/m);
      expect(r.summary.targets).toEqual({ added: 1, removed: 0, changed: 0, unchanged: 7 });
      expect(r.summary.guardHolds).toBe(0);
    },
    exitCode: 1,
  },
  {
    name: 'an image bump moves every web target, canary first',
    change: () =>
      write('apps/web/values.yaml', 'image: registry.example.com/web\ntag: "1.28"\nreplicas: 1\n'),
    check: (r) => {
      const web = r.appSets.find((a) => a.name === 'web');
      expect(web?.rollout).toEqual({
        strategy: 'canary-first',
        steps: ['canary', 'prod', 'everything-else'],
      });
      expect(web?.targets.map((t) => [t.name, t.change, t.step?.name])).toEqual([
        ['web-prod-eu', 'changed', 'canary'],
        ['web-prod-us', 'changed', 'prod'],
        ['web-staging-1', 'changed', 'everything-else'],
      ]);
      const diff = target(r, 'web', 'web-prod-eu').objects[0]?.diff ?? '';
      expect(diff).toContain('-        - image: registry.example.com/web:1.27');
      expect(diff).toContain('+        - image: registry.example.com/web:1.28');
      expect(diff).not.toContain('replicas');
      expect(r.appSets.find((a) => a.name === 'api')?.change).toBe('unchanged');
      expect(r.fleet.objects).toEqual([]);
      expect(r.policies).toMatchObject({ allowed: true, violations: [] });
      expect(r.policies.evaluated).toBe(3);
    },
    exitCode: 1,
  },
  {
    name: 'a values change that hits only env=prod clusters',
    change: () => write('apps/web/values-prod.yaml', 'replicas: 5\n'),
    check: (r) => {
      const web = r.appSets.find((a) => a.name === 'web');
      expect(web?.targets.map((t) => t.cluster)).toEqual(['prod-eu', 'prod-us']);
      expect(web?.unchangedTargets).toBe(1);
      const diff = target(r, 'web', 'web-prod-us').objects[0]?.diff ?? '';
      expect(diff).toContain('-  replicas: 3');
      expect(diff).toContain('+  replicas: 5');
      expect(r.summary.targets).toEqual({ added: 0, removed: 0, changed: 2, unchanged: 5 });
    },
    exitCode: 1,
  },
  {
    name: 'a removed app trips the deletion guard',
    change: () => rmSync(join(repo, 'fleet/appsets/api.yaml')),
    check: (r) => {
      const api = r.appSets.find((a) => a.name === 'api');
      expect(api?.change).toBe('removed');
      expect(api?.targets.map((t) => t.change)).toEqual(['removed', 'removed', 'removed', 'removed']);
      expect(api?.targets[0]?.objects.map((o) => [o.kind, o.change])).toEqual([['Service', 'removed']]);
      expect(r.fleet.objects.map((o) => [o.kind, o.name, o.change])).toEqual([
        ['ApplicationSet', 'api', 'removed'],
      ]);
      // 4 of the fleet's 7 targets would go: more than the hub's 50 %.
      expect(r.fleet.deletionGuard.targets).toEqual({
        wouldHold: true,
        deletePercent: 57.1,
        limit: 50,
        current: 7,
        deleting: 4,
        after: 3,
      });
      expect(r.fleet.deletionGuard.objects.wouldHold).toBe(false);
      expect(r.summary.guardHolds).toBe(1);
    },
    exitCode: 1,
  },
  {
    name: 'an appset narrowed to one cluster trips its own guard',
    change: () =>
      write(
        'fleet/appsets/api.yaml',
        API_APPSET.replace('- clusters: {}', '- clusters: {selector: {matchLabels: {env: dev}}}'),
      ),
    check: (r) => {
      const api = r.appSets.find((a) => a.name === 'api');
      expect(api?.targets.map((t) => [t.cluster, t.change])).toEqual([
        ['prod-eu', 'removed'],
        ['prod-us', 'removed'],
        ['staging-1', 'removed'],
      ]);
      expect(api?.deletionGuard).toEqual({
        wouldHold: true,
        deletePercent: 75,
        limit: 50,
        current: 4,
        deleting: 3,
        after: 1,
      });
      expect(r.fleet.deletionGuard.targets.wouldHold).toBe(false);
    },
    exitCode: 1,
  },
  {
    name: 'a deny window holds the prod steps of an image bump',
    change: () => {
      write('apps/web/values.yaml', 'image: registry.example.com/web\ntag: "1.28"\nreplicas: 1\n');
      write(
        'fleet/windows/monday-freeze.yaml',
        `apiVersion: flotilla.dev/v1alpha1
kind: SyncWindow
metadata:
  name: monday-freeze
spec:
  kind: deny
  schedule: '0 9 * * 1'
  duration: 4h
  timeZone: UTC
  clusters: ['prod-*']
`,
      );
    },
    check: (r) => {
      const held = r.appSets
        .find((a) => a.name === 'web')
        ?.targets.map((t) => [t.name, t.step?.name, t.windows]);
      expect(held).toEqual([
        [
          'web-prod-eu',
          'canary',
          {
            canSync: false,
            matching: ['monday-freeze'],
            active: ['monday-freeze'],
            heldUntil: '2026-03-02T13:00:00.000Z',
          },
        ],
        [
          'web-prod-us',
          'prod',
          {
            canSync: false,
            matching: ['monday-freeze'],
            active: ['monday-freeze'],
            heldUntil: '2026-03-02T13:00:00.000Z',
          },
        ],
        ['web-staging-1', 'everything-else', { canSync: true, matching: [], active: [], heldUntil: null }],
      ]);
      expect(r.fleet.objects.map((o) => [o.kind, o.name, o.change])).toEqual([
        ['SyncWindow', 'monday-freeze', 'added'],
      ]);
      expect(r.summary.heldByWindows).toBe(2);
    },
    exitCode: 1,
  },
  {
    name: "a change the head's admission policies deny",
    change: () => write('apps/web/values-prod.yaml', 'replicas: 20\n'),
    check: (r) => {
      expect(r.policies.allowed).toBe(false);
      expect(r.policies.violations.map((v) => [v.target, v.action, v.message])).toEqual([
        ['web-prod-eu', 'Deny', 'at most 10 replicas'],
        ['web-prod-us', 'Deny', 'at most 10 replicas'],
      ]);
      expect(r.summary.policyDenials).toBe(2);
    },
    exitCode: 1,
  },
  {
    name: 'a ClusterGroup relabelling a cluster moves it between appsets',
    change: () =>
      write(
        'fleet/clusters/groups.yaml',
        `apiVersion: flotilla.dev/v1alpha1
kind: ClusterGroup
metadata:
  name: promote-dev
spec:
  clusters: [dev-1]
  labels: {env: staging}
`,
      ),
    check: (r) => {
      expect(target(r, 'web', 'web-dev-1')).toMatchObject({
        change: 'added',
        step: { name: 'everything-else' },
      });
      expect(r.fleet.objects.map((o) => [o.kind, o.name, o.change])).toEqual([
        ['ClusterGroup', 'promote-dev', 'added'],
      ]);
    },
    exitCode: 1,
  },
  {
    name: 'a Project that does not allow one of the destinations',
    change: () => {
      write(
        'fleet/projects/web-team.yaml',
        `apiVersion: flotilla.dev/v1alpha1
kind: Project
metadata:
  name: web-team
spec:
  sourceRepos: ['${REPO_URL}']
  destinations:
    - {cluster: 'prod-*', namespace: web}
`,
      );
      write(
        'fleet/appsets/web.yaml',
        WEB_APPSET(['prod', 'staging']).replace('project: default', 'project: web-team'),
      );
    },
    check: (r) => {
      expect(r.projects.violations).toEqual([
        {
          appSet: 'web',
          target: 'web-staging-1',
          cluster: 'staging-1',
          code: 'destination-not-permitted',
          message: expect.stringContaining("project 'web-team'") as string,
        },
      ]);
      expect(r.summary.projectViolations).toBe(1);
      expect(r.appSets.find((a) => a.name === 'web')).toMatchObject({
        project: 'web-team',
        change: 'changed',
      });
    },
    exitCode: 1,
  },
  {
    name: 'a commit that changes nothing the fleet renders',
    change: () => write('README.md', 'docs only\n'),
    check: (r) => {
      expect(r.changed).toBe(false);
      expect(r.appSets.map((a) => a.change)).toEqual(['unchanged', 'unchanged']);
      expect(r.summary.targets.unchanged).toBe(7);
    },
    exitCode: 0,
  },
];

let baseCommit: string;

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'flotilla-plan-spec-'));
  repo = join(root, 'repo');
  mkdirSync(repo);
  clustersFile = join(root, 'clusters.json');
  writeFileSync(
    clustersFile,
    JSON.stringify([
      { name: 'prod-eu', server: 'https://prod-eu.example:6443', labels: { env: 'prod', canary: 'true' } },
      { name: 'prod-us', server: 'https://prod-us.example:6443', labels: { env: 'prod' } },
      { name: 'staging-1', server: 'https://staging-1.example:6443', labels: { env: 'staging' } },
      { name: 'dev-1', server: 'https://dev-1.example:6443', labels: { env: 'dev' } },
    ]),
  );
  git('init', '-q', '-b', 'main');
  writeBase();
  git('add', '-A');
  git('commit', '-q', '-m', 'base');
  baseCommit = git('rev-parse', 'HEAD');
});

afterAll(() => {
  rmSync(root, { recursive: true, force: true });
});

function planArgs(head: string, ...extra: string[]): string[] {
  return [
    '--fleet',
    repo,
    '--path',
    'fleet',
    '--base',
    'main',
    '--head',
    head,
    '--repo',
    `${REPO_URL}=${repo}`,
    '--clusters',
    clustersFile,
    '--at',
    AT,
    ...extra,
  ];
}

describe('flotilla plan between two commits of one repository', () => {
  it.each(CASES)('$name', async (c) => {
    const branch = `case-${CASES.indexOf(c)}`;
    git('checkout', '-q', '-b', branch, baseCommit);
    c.change();
    git('add', '-A');
    git('commit', '-q', '-m', c.name);
    const head = git('rev-parse', 'HEAD');
    git('checkout', '-q', 'main');

    const json = await runInProcess(run, planArgs(branch, '-o', 'json'));
    expect(json.err).toBe('');
    expect(json.code).toBe(0);
    const report = planReportSchema.parse(JSON.parse(json.out));
    expect(report.base.revision).toBe(baseCommit);
    expect(report.head.revision).toBe(head);
    expect(report.at).toBe('2026-03-02T10:00:00.000Z');
    c.check(report);

    const gate = await runInProcess(run, planArgs(branch, '--exit-code', '-o', 'markdown'));
    expect(gate.code).toBe(c.exitCode ?? 0);
    expect(gate.out.startsWith('### Flotilla plan:')).toBe(true);
    if (report.changed) expect(gate.out).toContain('<details>');

    const table = await runInProcess(run, planArgs(branch));
    expect(table.code).toBe(0);
    expect(table.out).toContain(`plan ${baseCommit.slice(0, 12)} -> ${head.slice(0, 12)}`);
  });

  it('leaves the checkout and its index as they were', async () => {
    const before = git('status', '--porcelain');
    await runInProcess(run, planArgs('case-1', '-o', 'json'));
    expect(git('status', '--porcelain')).toBe(before);
    expect(git('rev-parse', '--abbrev-ref', 'HEAD')).toBe('main');
  });

  it('plans two checkouts given as directories', async () => {
    const baseDir = join(root, 'checkout-base');
    const headDir = join(root, 'checkout-head');
    for (const [dir, rev] of [
      [baseDir, 'main'],
      [headDir, 'case-2'],
    ] as const) {
      const r = spawnSync('git', ['clone', '-q', '--branch', rev, repo, dir], { encoding: 'utf8' });
      expect(r.status, r.stderr).toBe(0);
    }
    const out = await runInProcess(run, [
      '--base-dir',
      join(baseDir, 'fleet'),
      '--head-dir',
      join(headDir, 'fleet'),
      '--base-repo',
      `${REPO_URL}=${baseDir}`,
      '--head-repo',
      `${REPO_URL}=${headDir}`,
      '--clusters',
      clustersFile,
      '--at',
      AT,
      '-o',
      'json',
    ]);
    expect(out.code).toBe(0);
    const report = planReportSchema.parse(JSON.parse(out.out));
    expect(report.base.revision).toBeNull();
    expect(report.summary.targets).toEqual({ added: 0, removed: 0, changed: 2, unchanged: 5 });
  });

  it.each([
    {
      name: 'an unknown revision',
      argv: () => planArgs('no-such-branch'),
      err: '--head no-such-branch: no such revision',
    },
    {
      name: 'no inventory',
      argv: () => ['--fleet', repo, '--base', 'main'],
      err: 'plan needs --clusters FILE',
    },
    {
      name: 'a bad time',
      argv: () => planArgs('main', '--at', 'monday'),
      err: "--at 'monday' is not an RFC 3339 time",
    },
    {
      name: 'both modes at once',
      argv: () => [...planArgs('main'), '--base-dir', repo],
      err: 'give either --base/--head',
    },
    {
      name: 'an unknown output',
      argv: () => planArgs('main', '-o', 'html'),
      err: '-o must be table, json, markdown or yaml',
    },
  ])('refuses $name with exit 2 and one line', async ({ argv, err }) => {
    const out = await runInProcess(run, argv());
    expect(out.code).toBe(2);
    expect(out.out).toBe('');
    expect(out.err).toContain(err);
  });

  it('fails with exit 1 and {"error"} when the head fleet repository is invalid', async () => {
    git('checkout', '-q', '-b', 'invalid', baseCommit);
    write(
      'fleet/appsets/web.yaml',
      WEB_APPSET(['prod']).replace('rolloutStrategy: canary-first', 'rolloutStrategy: missing'),
    );
    git('commit', '-q', '-am', 'dangling strategy');
    git('checkout', '-q', 'main');
    const out = await runInProcess(run, planArgs('invalid', '-o', 'json'));
    expect(out.code).toBe(1);
    const { error } = JSON.parse(out.out) as { error: string };
    expect(error).toMatch(/^head \([0-9a-f]{12}\): the fleet repository is invalid/);
    expect(error).toContain('missing');
  });
});
