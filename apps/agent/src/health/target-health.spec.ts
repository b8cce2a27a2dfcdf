import { describe, expect, it } from 'vitest';
import { type HealthStatus, type KubeObject, type ObjectRef } from '@flotilla/contract';
import { type HealthAssessor, aggregateHealth } from './target-health.js';

/** Reads the verdict from an annotation, so each case states its objects' health in the fixture. */
const assessor: HealthAssessor = {
  assess(obj) {
    const status = obj.metadata.annotations?.['test/health'];
    if (status === 'throw') throw new Error('lua: boom');
    return status ? { status: status as HealthStatus, message: `is ${status}` } : null;
  },
};
const obj = (name: string, health?: string): { ref: ObjectRef; live: KubeObject } => ({
  ref: { group: 'apps', kind: 'Deployment', namespace: 'shop', name },
  live: {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace: 'shop', annotations: health ? { 'test/health': health } : {} },
  },
});
const missing = (name: string): { ref: ObjectRef; live: undefined } => ({
  ref: { group: '', kind: 'ConfigMap', namespace: 'shop', name },
  live: undefined,
});

describe('aggregateHealth', () => {
  it('is the worst status in Argo CD order and names the culprits', () => {
    const h = aggregateHealth(
      [obj('a', 'Healthy'), obj('b', 'Progressing'), obj('c', 'Suspended')],
      assessor,
    );
    expect(h.status).toBe('Progressing');
    expect(h.message).toBe('apps/Deployment:shop/b (is Progressing)');
    expect(h.resources.map((r) => [r.name, r.status])).toEqual([
      ['a', 'Healthy'],
      ['b', 'Progressing'],
      ['c', 'Suspended'],
    ]);
    expect(aggregateHealth([obj('a', 'Degraded'), obj('b', 'Unknown')], assessor).status).toBe('Unknown');
  });

  it('leaves out kinds no rule knows; nothing to judge is Healthy', () => {
    const h = aggregateHealth([obj('a'), obj('b')], assessor);
    expect(h).toEqual({ status: 'Healthy', message: '', resources: [] });
  });

  it('does not let one missing object make the target Missing, but all missing does', () => {
    expect(aggregateHealth([obj('a', 'Healthy'), missing('c')], assessor).status).toBe('Healthy');
    expect(aggregateHealth([missing('c'), missing('d')], assessor).status).toBe('Missing');
  });

  it('turns a failing health check into Unknown with the error', () => {
    const h = aggregateHealth([obj('a', 'throw')], assessor);
    expect(h.status).toBe('Unknown');
    expect(h.resources[0]?.message).toBe('health check failed: lua: boom');
  });

  it('names at most three culprits', () => {
    const h = aggregateHealth(
      ['a', 'b', 'c', 'd', 'e'].map((n) => obj(n, 'Degraded')),
      assessor,
    );
    expect(h.message).toMatch(/shop\/c \(is Degraded\) and 2 more$/);
  });
});
