import { describe, expect, it } from 'vitest';
import { clone, deepFreeze } from './json.js';

describe('clone', () => {
  it('copies a JSON value as a JSON round trip would, sharing nothing with the original', () => {
    const value = {
      metadata: { name: 'web', annotations: undefined, labels: { app: 'web' } },
      spec: { replicas: 2, ratio: Number.NaN, ports: [{ port: 80 }, undefined], paused: false, note: null },
    };
    const copy = clone(value);
    expect(copy).toEqual(JSON.parse(JSON.stringify(value)));
    expect(Object.keys(copy.metadata)).toEqual(['name', 'labels']);
    expect(copy.spec.ports).toEqual([{ port: 80 }, null]);
    expect(copy.spec.ratio).toBeNull();
    copy.metadata.labels.app = 'changed';
    copy.spec.ports[0]!.port = 81;
    expect(value.metadata.labels.app).toBe('web');
    expect(value.spec.ports[0]!.port).toBe(80);
  });

  it('keeps a parsed __proto__ key as data instead of setting the prototype', () => {
    const parsed = JSON.parse('{"data":{"__proto__":{"polluted":"yes"}}}') as { data: object };
    const copy = clone(parsed);
    expect(Object.getPrototypeOf(copy.data)).toBe(Object.prototype);
    expect(Object.keys(copy.data)).toEqual(['__proto__']);
    expect(JSON.stringify(copy)).toBe(JSON.stringify(parsed));
  });

  it('copies frozen snapshots into objects that can be changed', () => {
    const frozen = deepFreeze({ spec: { containers: [{ name: 'main' }] } });
    const copy = clone(frozen);
    copy.spec.containers.push({ name: 'sidecar' });
    expect(frozen.spec.containers).toHaveLength(1);
    expect(() => (frozen.spec.containers as { name: string }[]).push({ name: 'x' })).toThrow(TypeError);
  });
});
