import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { DiffError } from './diff-error.js';
import { normalizeObject } from './normalize-object.js';

const secret = parse(`
apiVersion: v1
kind: Secret
metadata:
  name: db
  namespace: shop
  uid: 7c1e
  resourceVersion: "12"
  creationTimestamp: "2026-12-01T10:00:00Z"
  managedFields: [{manager: flotilla, operation: Apply}]
  annotations: null
stringData: {password: "s3cret"}
data: {username: YXBw, password: b2xk}
`) as unknown;

describe('normalizeObject', () => {
  it('drops server metadata, status and nulls, and folds stringData into data', () => {
    expect(normalizeObject(secret)).toEqual({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'db', namespace: 'shop' },
      type: 'Opaque',
      data: { username: 'YXBw', password: 'czNjcmV0' },
    });
  });

  it('leaves defaults out when asked, and never changes its input', () => {
    const before = structuredClone(secret);
    expect(normalizeObject(secret, { defaults: false })).not.toHaveProperty('type');
    expect(secret).toEqual(before);
  });

  it('fills a Deployment template with the server defaults', () => {
    const deployment = normalizeObject({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'web' },
      spec: {
        template: { spec: { containers: [{ name: 'web', image: 'nginx', ports: [{ containerPort: 80 }] }] } },
      },
      status: { replicas: 1 },
    });
    expect(deployment).toEqual({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'web' },
      spec: {
        replicas: 1,
        revisionHistoryLimit: 10,
        progressDeadlineSeconds: 600,
        strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: '25%', maxUnavailable: '25%' } },
        template: {
          spec: {
            dnsPolicy: 'ClusterFirst',
            restartPolicy: 'Always',
            schedulerName: 'default-scheduler',
            securityContext: {},
            terminationGracePeriodSeconds: 30,
            containers: [
              {
                name: 'web',
                image: 'nginx',
                imagePullPolicy: 'Always',
                ports: [{ containerPort: 80, protocol: 'TCP' }],
                resources: {},
                terminationMessagePath: '/dev/termination-log',
                terminationMessagePolicy: 'File',
              },
            ],
          },
        },
      },
    });
  });

  it('removes what matching ignore rules designate', () => {
    const out = normalizeObject(secret, {
      defaults: false,
      ignoreRules: [
        { kind: 'Secret', jsonPointers: ['/data/password'] },
        { kind: 'Secret', name: 'other', jsonPointers: ['/data/username'] },
      ],
    });
    expect(out).toEqual({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'db', namespace: 'shop' },
      data: { username: 'YXBw' },
    });
  });

  it('rejects a rule that cannot work', () => {
    expect(() =>
      normalizeObject(secret, { ignoreRules: [{ kind: 'Secret', jqPathExpressions: ['.data['] }] }),
    ).toThrow(DiffError);
  });

  it('passes anything that is not an object through', () => {
    expect(normalizeObject('text')).toBe('text');
    expect(normalizeObject(null)).toBeNull();
  });
});

describe('normalizeObject on hostile keys', () => {
  it('keeps a __proto__ key from a parsed document as a plain field', () => {
    const obj = JSON.parse(
      '{"kind":"ConfigMap","metadata":{"name":"x"},"data":{"__proto__":{"polluted":"yes"}}}',
    ) as unknown;
    const out = normalizeObject(obj) as { data: Record<string, unknown> };
    expect(Object.keys(out.data)).toEqual(['__proto__']);
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
  });
});
