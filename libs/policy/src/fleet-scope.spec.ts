import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import {
  bindingScope,
  compilePolicySet,
  describeViolation,
  gateBundle,
  scopedPolicySet,
  type TargetScope,
} from './index.js';

const read = (name: string): unknown[] =>
  parseAllDocuments(readFileSync(join(import.meta.dirname, 'testdata', 'gate', name), 'utf8')).map(
    (d) => d.toJS() as unknown,
  );
const { set, errors } = compilePolicySet(read('policies.yaml'));
const bundle = read('bundle.yaml');
const params = read('params.yaml');

describe('scoping annotations', () => {
  it('compiles the fixture', () => {
    expect(errors).toEqual([]);
  });

  const cases: { name: string; target: TargetScope; bindings: string[] }[] = [
    {
      name: 'prod cluster of another project',
      target: { project: 'team-c', appSet: 'web', clusterLabels: { env: 'prod' } },
      bindings: ['allowed-registry-prod', 'replica-limit'],
    },
    {
      name: 'staging cluster of team-a, appset web',
      target: { project: 'team-a', appSet: 'web', clusterLabels: { env: 'staging' } },
      bindings: ['allowed-registry-warn', 'replica-limit'],
    },
    {
      name: 'team-b, another appset',
      target: { project: 'team-b', appSet: 'api', clusterLabels: {} },
      bindings: ['replica-limit'],
    },
  ];
  for (const c of cases)
    it(`selects the bindings of: ${c.name}`, () => {
      expect(scopedPolicySet(set, c.target).bindings.map((b) => b.name)).toEqual(c.bindings);
    });

  const bad: { annotations: Record<string, unknown>; path: string; message: string }[] = [
    {
      annotations: { 'flotilla.dev/cluster-selector': 'env in prod' },
      path: 'flotilla.dev/cluster-selector',
      message: 'invalid cluster selector',
    },
    {
      annotations: { 'flotilla.dev/cluster-selector': ' ' },
      path: 'flotilla.dev/cluster-selector',
      message: 'got none',
    },
    { annotations: { 'flotilla.dev/projects': ',' }, path: 'flotilla.dev/projects', message: 'got none' },
    {
      annotations: { 'flotilla.dev/break-glass': 'yes' },
      path: 'flotilla.dev/break-glass',
      message: "only 'allow'",
    },
  ];
  for (const b of bad)
    it(`refuses ${JSON.stringify(b.annotations)} naming the annotation`, () => {
      const { errors: found } = bindingScope({ metadata: { name: 'x', annotations: b.annotations } });
      expect(found).toHaveLength(1);
      expect(found[0]?.path).toEqual(['metadata', 'annotations', b.path]);
      expect(found[0]?.message).toContain(b.message);
    });
});

describe('gateBundle', () => {
  it('denies a prod target for its registry and replicas, naming policy, binding and object', () => {
    const prod = scopedPolicySet(set, { project: 'p', appSet: 'web', clusterLabels: { env: 'prod' } });
    const verdict = gateBundle(prod, bundle, { namespace: 'shop', params });
    expect(verdict.allowed).toBe(false);
    expect(verdict.denials.map(describeViolation)).toEqual([
      'policy allowed-registry (binding allowed-registry-prod) denies Deployment shop/web: images come from registry.example.com, not docker.io/library/nginx:1.27',
      'policy replica-limit (binding replica-limit) denies Deployment shop/web: at most 2 replicas',
    ]);
    expect(verdict.denials.map((d) => d.breakGlassAllowed)).toEqual([false, true]);
  });

  it('lets a Warn through and keeps it', () => {
    const staging = scopedPolicySet(set, { project: 'team-a', appSet: 'web', clusterLabels: {} });
    const noReplicaLimit = {
      ...staging,
      bindings: staging.bindings.filter((b) => b.name !== 'replica-limit'),
    };
    const verdict = gateBundle(noReplicaLimit, bundle, { namespace: 'shop', params });
    expect(verdict.allowed).toBe(true);
    expect(verdict.warnings.map((w) => `${w.policy} ${w.object.kind}/${w.object.name}`)).toEqual([
      'allowed-registry Deployment/web',
    ]);
  });

  it('evaluates an UPDATE with the live object the agent passes', () => {
    const seen: string[] = [];
    gateBundle(set, bundle, {
      namespace: 'shop',
      params,
      oldObjectOf: (o) => {
        seen.push(String(o.kind));
        return null;
      },
    });
    expect(seen).toEqual(['Deployment', 'ConfigMap']);
  });
});
