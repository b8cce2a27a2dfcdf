import 'reflect-metadata';
import { describe, expect, it } from 'vitest';
import { planExpansion, targetSetHash, type DesiredTarget } from './expansion-plan.js';
import type { Target } from '../generated/prisma/client.js';

const desired = (name: string, over: Partial<DesiredTarget> = {}): DesiredTarget => ({
  name,
  clusterId: `id-${name}`,
  clusterName: name,
  namespace: 'web',
  repoUrl: 'https://git.example/fleet.git',
  sourcePath: 'app',
  targetRevision: 'main',
  desiredRevision: 'a'.repeat(40),
  sources: null,
  bundleDigest: `sha256:${'b'.repeat(64)}`,
  syncPolicy: { automated: true, prune: true },
  params: { cluster: name },
  ...over,
});

// A stored row as Prisma returns it (JSONB may reorder keys, which must not count as a change).
const stored = (d: DesiredTarget): Target =>
  ({
    id: `t-${d.name}`,
    name: d.name,
    appSetId: 'as',
    clusterId: d.clusterId,
    namespace: d.namespace,
    repoUrl: d.repoUrl,
    sourcePath: d.sourcePath,
    targetRevision: d.targetRevision,
    desiredRevision: d.desiredRevision,
    sources: d.sources,
    bundleDigest: d.bundleDigest,
    syncPolicy: { prune: true, automated: true },
    params: d.params,
  }) as unknown as Target;

describe('planExpansion', () => {
  it('creates the new, updates only what differs, deletes what is no longer generated', () => {
    const existing = [stored(desired('a')), stored(desired('b')), stored(desired('c'))];
    const plan = planExpansion(existing, [desired('a'), desired('b', { namespace: 'other' }), desired('d')]);
    expect(plan.create.map((d) => d.name)).toEqual(['d']);
    expect(plan.update.map((u) => [u.current.id, u.desired.namespace])).toEqual([['t-b', 'other']]);
    expect(plan.delete.map((t) => t.id)).toEqual(['t-c']);
  });

  it("updates a multi-source target when a source's recorded revision moved", () => {
    const sources = [
      { repoUrl: 'https://charts.example', chart: 'web', targetRevision: '^1.0.0', revision: '1.1.0' },
      { repoUrl: 'https://git.example/values.git', ref: 'values', targetRevision: 'main', revision: 'c1' },
    ];
    const moved = sources.map((s, i) => (i === 1 ? { ...s, revision: 'c2' } : s));
    const current = [stored(desired('a', { sources }))];
    expect(planExpansion(current, [desired('a', { sources })]).update).toEqual([]);
    expect(planExpansion(current, [desired('a', { sources: moved })]).update).toHaveLength(1);
  });

  it('deletes everything when the generators yield nothing', () => {
    const plan = planExpansion([stored(desired('a')), stored(desired('b'))], []);
    expect(plan).toMatchObject({ create: [], update: [] });
    expect(plan.delete.map((t) => t.name)).toEqual(['a', 'b']);
  });
});

describe('targetSetHash', () => {
  it('ignores order and key order, and changes with any field', () => {
    const a = [desired('a'), desired('b')];
    const reordered = [
      desired('b', { params: { cluster: 'b' }, syncPolicy: { prune: true, automated: true } }),
      desired('a'),
    ];
    expect(targetSetHash(reordered)).toBe(targetSetHash(a));
    expect(targetSetHash([desired('a'), desired('b', { desiredRevision: 'c'.repeat(40) })])).not.toBe(
      targetSetHash(a),
    );
    expect(targetSetHash([])).toMatch(/^[0-9a-f]{24}$/);
  });
});
