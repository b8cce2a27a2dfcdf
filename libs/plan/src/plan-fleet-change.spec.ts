import { describe, expect, it } from 'vitest';
import { type KubeObject } from '@flotilla/contract';
import { validateFleetDirectory } from '@flotilla/fleet-config';
import { formatPlanMarkdown, formatPlanTable, MAX_MARKDOWN_CHARS } from './format-plan.js';
import { planFleetChange, type FleetSide, type PlannedTarget } from './plan-fleet-change.js';
import { planReportSchema } from './plan-report.js';
import { withRawAppSets } from './stored-appsets.js';

// The pure half of `flotilla plan`: two sides built by hand (the CLI's spec covers Git and render).

const APPSET = `apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: web}
spec:
  generators: [{clusters: {}}]
  template:
    metadata: {name: 'web-{{name}}'}
    spec:
      project: default
      source: {repoURL: 'https://git.example/web.git', path: web}
      destination: {name: '{{name}}', namespace: web}
`;

function side(files: Record<string, string>, targets: PlannedTarget[], revision: string): FleetSide {
  const list = Object.entries(files).map(([path, content]) => ({ path, content }));
  const v = validateFleetDirectory(list);
  expect(v.errors).toEqual([]);
  return {
    revision,
    objects: withRawAppSets(v.objects, list),
    policies: v.policies,
    params: v.params,
    targets,
    clusterLabels: new Map(targets.map((t) => [t.cluster ?? '', {}])),
  };
}

function deployment(image: string): KubeObject {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'web', namespace: 'web' },
    spec: { template: { spec: { containers: [{ name: 'web', image }] } } },
  };
}

function targets(n: number, image: string): PlannedTarget[] {
  return Array.from({ length: n }, (_, i) => ({
    appSet: 'web',
    name: `web-c${String(i).padStart(3, '0')}`,
    cluster: `c${String(i).padStart(3, '0')}`,
    clusterServer: null,
    namespace: 'web',
    repoURLs: ['https://git.example/web.git'],
    digest: `sha256:${image}`,
    objects: [deployment(image)],
  }));
}

const OPTIONS = { at: new Date('2026-03-02T10:00:00Z'), deletionGuardPercent: 50 };

describe('planFleetChange', () => {
  it.each([
    { name: 'half the targets gone is at the limit: not held', keep: 2, of: 4, holds: false },
    { name: 'more than half gone is held', keep: 1, of: 4, holds: true },
    { name: 'all gone is always held', keep: 0, of: 2, holds: true },
  ])('the appset guard: $name', ({ keep, of, holds }) => {
    const files = { 'web.yaml': APPSET };
    const r = planFleetChange(
      side(files, targets(of, 'a'), 'b'),
      side(files, targets(keep, 'a'), 'h'),
      OPTIONS,
    );
    expect(r.appSets[0]?.deletionGuard.wouldHold).toBe(holds);
    expect(r.summary.targets.removed).toBe(of - keep);
    expect(r.summary.guardHolds).toBe(holds ? 1 : 0);
  });

  it('shows one diff for the same change on many clusters, and stays within a comment', () => {
    const files = { 'web.yaml': APPSET };
    const r = planFleetChange(
      side(files, targets(400, 'web:1'), 'b'),
      side(files, targets(400, 'web:2'), 'h'),
      OPTIONS,
    );
    expect(planReportSchema.parse(r)).toEqual(r);
    const md = formatPlanMarkdown(r);
    expect(md.length).toBeLessThanOrEqual(MAX_MARKDOWN_CHARS);
    expect(md).toContain('**0 targets added, 400 changed, 0 removed');
    expect(md.match(/```diff/g)).toHaveLength(1);
    expect(md).toContain('on web-c000, web-c001, web-c002 and 397 more');
    const table = formatPlanTable(r);
    expect(table.split('\n').filter((l) => l.includes('~Deployment web/web'))).toHaveLength(400);
  });

  it('cuts a long markdown between blocks, closing what it opened', () => {
    const files = { 'web.yaml': APPSET };
    const many = (v: string) =>
      targets(300, 'x').map((t, i) => ({ ...t, digest: `${v}${i}`, objects: [deployment(`img-${v}-${i}`)] }));
    const md = formatPlanMarkdown(
      planFleetChange(side(files, many('a'), 'b'), side(files, many('b'), 'h'), OPTIONS),
    );
    expect(md.length).toBeLessThanOrEqual(MAX_MARKDOWN_CHARS);
    expect(md).toContain('run `flotilla plan -o json` for all of it');
    expect(md.match(/<details>/g)?.length).toBe(md.match(/<\/details>/g)?.length);
    expect((md.match(/```/g)?.length ?? 0) % 2).toBe(0);
  });

  it('refuses an appset whose project the hub would refuse, naming it', () => {
    const base = side({ 'web.yaml': APPSET }, targets(1, 'a'), 'b');
    const head = side({ 'web.yaml': APPSET }, targets(1, 'b'), 'h');
    const templated = head.objects.map((o) =>
      o.kind === 'ApplicationSet'
        ? { ...o, object: { ...o.object, spec: { ...o.object.spec, project: '{{name}}' } } }
        : o,
    );
    expect(() => planFleetChange(base, { ...head, objects: templated }, OPTIONS)).toThrow(
      /ApplicationSet web: spec.project: the project must be written literally/,
    );
  });

  it('judges each target with the bindings whose flotilla.dev/ scope holds it, as the hub does', () => {
    const policies = `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: allowed-registry}
spec:
  matchConstraints:
    resourceRules: [{apiGroups: [apps], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [deployments]}]
  validations: [{expression: "object.spec.template.spec.containers.all(c, c.image.startsWith('registry.example.com/'))"}]
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: allowed-registry
  annotations: {flotilla.dev/cluster-selector: env=prod}
spec: {policyName: allowed-registry, validationActions: [Deny]}
`;
    const files = { 'web.yaml': APPSET, 'policies.yaml': policies };
    const head = side(files, targets(2, 'docker.io/nginx'), 'h');
    head.clusterLabels = new Map([
      ['c000', { env: 'prod' }],
      ['c001', { env: 'staging' }],
    ]);
    const r = planFleetChange(side(files, targets(2, 'registry.example.com/web'), 'b'), head, OPTIONS);
    expect(r.policies.allowed).toBe(false);
    expect(r.policies.violations.map((v) => `${v.target} ${v.action}`)).toEqual(['web-c000 Deny']);
  });

  it('says so when nothing changes', () => {
    const files = { 'web.yaml': APPSET };
    const r = planFleetChange(side(files, targets(2, 'a'), 'b'), side(files, targets(2, 'a'), 'h'), OPTIONS);
    expect(r.changed).toBe(false);
    expect(formatPlanMarkdown(r)).toContain('No changes: the fleet stays as it is.');
  });
});
