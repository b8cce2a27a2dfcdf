import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { covers, managedFieldsOf, ownedNodes } from './managed-fields.js';
import { lastAppliedFieldSet } from './last-applied.js';

const live = parse(`
apiVersion: v1
kind: Service
metadata:
  name: web
  finalizers: [example.com/cleanup, example.com/audit]
  annotations:
    kubectl.kubernetes.io/last-applied-configuration: '{"apiVersion":"v1","kind":"Service","metadata":{"annotations":{},"labels":{"app":"web"},"name":"web"},"spec":{"selector":{"app":"web"},"ports":[{"port":80}]}}'
  managedFields:
    - manager: flotilla
      operation: Apply
      fieldsType: FieldsV1
      fieldsV1:
        f:metadata:
          f:finalizers: {v:"example.com/audit": {}}
        f:spec:
          f:selector: {}
          f:ports:
            k:{"port":80,"protocol":"TCP"}: {.: {}, f:port: {}}
            k:{"port":8443,"protocol":"TCP"}: {.: {}, f:port: {}}
    - manager: broken
      fieldsV1: "not a field set"
spec:
  selector: {app: web}
  ports:
    - {name: metrics, port: 9090, protocol: TCP}
    - {port: 80}
`) as unknown;

describe('managedFields', () => {
  it('reads only well-formed entries', () => {
    expect(managedFieldsOf(live).map((e) => [e.manager, e.operation, e.subresource])).toEqual([
      ['flotilla', 'Apply', ''],
    ]);
  });

  it('resolves f:, k: (with key defaults) and v: steps to paths in the object, skipping stale keys', () => {
    const [entry] = managedFieldsOf(live);
    expect(ownedNodes('Service', entry!, live)).toEqual([
      { path: ['metadata', 'finalizers', 1], whole: true },
      { path: ['spec', 'selector'], whole: true },
      { path: ['spec', 'ports', 1], whole: false },
      { path: ['spec', 'ports', 1, 'port'], whole: true },
    ]);
  });

  it('covers a path it owns, or one inside a value it owns whole', () => {
    const [entry] = managedFieldsOf(live);
    const nodes = ownedNodes('Service', entry!, live);
    expect(covers(nodes, ['spec', 'selector', 'app'])).toBe(true);
    expect(covers(nodes, ['spec', 'ports', 1])).toBe(true);
    expect(covers(nodes, ['spec', 'ports', 1, 'name'])).toBe(false);
    expect(covers(nodes, ['spec', 'ports', 0])).toBe(false);
  });

  it('turns last-applied-configuration into a field set (empty maps own nothing)', () => {
    expect(lastAppliedFieldSet('Service', live)).toEqual({
      'f:metadata': { 'f:labels': { 'f:app': {} } },
      'f:spec': {
        'f:selector': {},
        'f:ports': { 'k:{"port":80,"protocol":"TCP"}': { '.': {}, 'f:port': {} } },
      },
    });
  });
});
