import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { type JsonObject } from '../json.js';
import { applyDefaults, normaliseTimes, type DefaultingContext } from './defaults.js';

interface Case {
  name: string;
  group: string;
  input: JsonObject;
  expected: JsonObject;
}

const cases = parse(
  readFileSync(join(import.meta.dirname, 'testdata', 'defaults-cases.yaml'), 'utf8'),
) as Case[];

function context(): DefaultingContext {
  let ip = 10;
  let port = 30000;
  return { errors: [], allocateClusterIP: () => `10.96.0.${ip++}`, allocateNodePort: () => port++ };
}

describe('applyDefaults', () => {
  it.each(cases.map((c) => [c.name, c] as const))('%s', (_name, c) => {
    const o = structuredClone(c.input);
    const ctx = context();
    applyDefaults(String(c.input['kind']), c.group, o, ctx);
    expect(ctx.errors).toEqual([]);
    expect(o).toEqual(c.expected);
  });

  it('keeps an allocated clusterIP and nodePorts on update', () => {
    const old = {
      spec: {
        type: 'NodePort',
        clusterIP: '10.96.0.99',
        clusterIPs: ['10.96.0.99'],
        ports: [{ port: 80, protocol: 'TCP', nodePort: 31234 }],
      },
    };
    const o: JsonObject = {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 's' },
      spec: { type: 'NodePort', ports: [{ port: 80 }] },
    };
    applyDefaults('Service', '', o, { ...context(), old });
    expect(o['spec']).toMatchObject({
      clusterIP: '10.96.0.99',
      clusterIPs: ['10.96.0.99'],
      externalTrafficPolicy: 'Cluster',
      ports: [{ port: 80, protocol: 'TCP', targetPort: 80, nodePort: 31234 }],
    });
  });

  it('reports a bad quantity with its field path', () => {
    const ctx = context();
    const o: JsonObject = {
      metadata: { name: 'p' },
      spec: { containers: [{ name: 'a', image: 'a:1', resources: { limits: { cpu: 'lots' } } }] },
    };
    applyDefaults('Pod', '', o, ctx);
    expect(ctx.errors).toEqual([
      {
        reason: 'FieldValueInvalid',
        field: 'spec.containers[0].resources.limits[cpu]',
        message: `Invalid value: "lots": quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'`,
      },
    ]);
  });

  it('drops fractional seconds from metav1.Time fields only', () => {
    const o = {
      metadata: {
        creationTimestamp: '2026-12-02T09:54:29.000Z',
        managedFields: [{ time: '2026-12-02T09:54:29.123Z' }],
      },
      data: { note: '2026-12-02T09:54:29.000Z' },
    };
    normaliseTimes(o);
    expect(o).toEqual({
      metadata: {
        creationTimestamp: '2026-12-02T09:54:29Z',
        managedFields: [{ time: '2026-12-02T09:54:29Z' }],
      },
      data: { note: '2026-12-02T09:54:29.000Z' },
    });
  });
});
