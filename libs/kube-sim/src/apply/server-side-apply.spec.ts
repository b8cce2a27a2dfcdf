/* eslint-disable @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-assignment --
   API results are read as untyped JSON documents and checked field by field. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { beforeEach, describe, expect, it } from 'vitest';
import { ClusterApi } from '../api/cluster-api.js';
import { ManualClock } from '../clock.js';
import { StatusError } from '../errors.js';
import { type JsonObject } from '../json.js';
import { ResourceRegistry } from '../resources/resource-registry.js';
import { type ResourceType } from '../resources/resource-type.js';
import { ObjectStore } from '../store/object-store.js';

type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const fixture = (name: string): JsonObject =>
  parse(readFileSync(join(import.meta.dirname, 'testdata', name), 'utf8')) as JsonObject;

describe('server-side apply (ClusterApi, no HTTP)', () => {
  let api: ClusterApi;
  let deployments: ResourceType;
  const apply = (manager: string, body: JsonObject, force = false, dryRun = false): Obj =>
    api.patch(deployments, 'default', String((body['metadata'] as Obj)['name']), 'apply', body, {
      manager,
      force,
      dryRun,
    }).object;
  const managers = (o: Obj): string[] =>
    (o['metadata']['managedFields'] as Obj[]).map((m) => `${m['manager']}:${m['operation']}`);
  const conflictOf = (f: () => unknown): StatusError => {
    try {
      f();
    } catch (err) {
      if (err instanceof StatusError) return err;
      throw err;
    }
    throw new Error('expected a conflict');
  };

  beforeEach(() => {
    api = new ClusterApi(new ResourceRegistry(), new ObjectStore(2000, { freeze: true }), new ManualClock());
    api.bootstrap();
    deployments = api.rt('apps', 'v1', 'deployments');
  });

  it('prunes what the applier stopped declaring, merges associative lists by key, unions set lists', () => {
    apply('flotilla', fixture('app-v1.yaml'));
    const v2 = apply('flotilla', fixture('app-v2.yaml'));
    expect(v2['metadata']['labels']).toEqual({ app: 'app' });
    // metadata.finalizers is a set list: the union of both applies, minus what was pruned.
    expect(v2['metadata']['finalizers']).toEqual(['example.com/b']);
    // spec.replicas is no longer declared: removed, then defaulted back to 1.
    expect(v2['spec']['replicas']).toBe(1);
    const c = v2['spec']['template']['spec']['containers'];
    expect(c).toHaveLength(1);
    expect(c[0]['image']).toBe('app:2');
    expect(c[0]['env']).toEqual([{ name: 'A', value: '1' }]);
    expect(c[0]['ports']).toEqual([{ containerPort: 8080, protocol: 'TCP' }]);
    expect(
      v2['metadata']['managedFields'][0]['fieldsV1']['f:spec']['f:template']['f:spec']['f:containers'][
        'k:{"name":"app"}'
      ]['f:ports'],
    ).toEqual({
      'k:{"containerPort":8080,"protocol":"TCP"}': { '.': {}, 'f:containerPort': {} },
    });
  });

  it('keeps fields another manager owns when the applier drops them', () => {
    apply('flotilla', fixture('app-v1.yaml'));
    api.patch(
      deployments,
      'default',
      'app',
      'merge',
      { metadata: { labels: { tier: 'web', owner: 'ops' } } },
      { manager: 'ops' },
    );
    const v2 = apply('flotilla', fixture('app-v2.yaml'));
    expect(v2['metadata']['labels']).toEqual({ app: 'app', owner: 'ops' });
    const ops = (v2['metadata']['managedFields'] as Obj[]).find((m) => m['manager'] === 'ops');
    // The merge patch re-set tier to the same value, so ops owns only the label it added.
    expect(ops?.['fieldsV1']).toEqual({ 'f:metadata': { 'f:labels': { 'f:owner': {} } } });
  });

  it('co-owns fields set to the same value, and conflicts on a different value unless forced', () => {
    apply('a', fixture('app-v1.yaml'));
    const shared = apply('b', {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'app' },
      spec: { replicas: 3 },
    });
    expect(managers(shared)).toEqual(['a:Apply', 'b:Apply']);
    const err = conflictOf(() =>
      apply('b', {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: 'app' },
        spec: { replicas: 4 },
      }),
    );
    expect(err.toStatus()).toEqual({
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      reason: 'Conflict',
      code: 409,
      message: 'Apply failed with 1 conflict: conflict with "a": .spec.replicas',
      details: {
        causes: [{ reason: 'FieldManagerConflict', message: 'conflict with "a"', field: '.spec.replicas' }],
      },
    });
    const forced = apply(
      'b',
      { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'app' }, spec: { replicas: 4 } },
      true,
    );
    expect(forced['spec']['replicas']).toBe(4);
    const a = (forced['metadata']['managedFields'] as Obj[]).find((m) => m['manager'] === 'a');
    expect(a?.['fieldsV1']['f:spec']['f:replicas']).toBeUndefined();
  });

  it('lists several conflicts per manager, sorted', () => {
    apply('a', fixture('app-v1.yaml'));
    const changed: Obj = fixture('app-v1.yaml');
    changed['spec']['replicas'] = 5;
    changed['metadata']['labels']['tier'] = 'db';
    const err = conflictOf(() => apply('z', changed));
    expect(err.message).toBe(
      'Apply failed with 2 conflicts: conflicts with "a":\n- .metadata.labels.tier\n- .spec.replicas',
    );
    expect(err.details?.causes).toHaveLength(2);
  });

  it('attributes an untracked object to before-first-apply', () => {
    apply('flotilla', fixture('app-v1.yaml'));
    api.patch(
      deployments,
      'default',
      'app',
      'json',
      [{ op: 'replace', path: '/metadata/managedFields', value: [] }],
      { manager: 'flux' },
    );
    expect(api.get(deployments, 'default', 'app')['metadata']).not.toHaveProperty('managedFields');
    const changed: Obj = fixture('app-v1.yaml');
    changed['spec']['replicas'] = 7;
    const err = conflictOf(() => apply('flotilla', changed));
    expect(err.message).toBe(
      'Apply failed with 1 conflict: conflict with "before-first-apply" using apps/v1: .spec.replicas',
    );
  });

  it('is a no-op when nothing changes, and dry-run never writes', () => {
    const first = apply('flotilla', fixture('app-v1.yaml'));
    const rv = api.store.resourceVersion;
    const again = apply('flotilla', fixture('app-v1.yaml'));
    expect(again['metadata']['resourceVersion']).toBe(first['metadata']['resourceVersion']);
    const dry = apply('flotilla', fixture('app-v2.yaml'), false, true);
    expect(dry['spec']['template']['spec']['containers'][0]['image']).toBe('app:2');
    expect(dry['metadata']['resourceVersion']).toBe(first['metadata']['resourceVersion']);
    expect(api.store.resourceVersion).toBe(rv);
  });

  it('ignores status in an applied config for kinds with a status subresource', () => {
    const created = apply('flotilla', { ...fixture('app-v1.yaml'), status: { replicas: 5 } });
    expect(created['status']).toBeUndefined();
    expect(created['metadata']['managedFields'][0]['fieldsV1']).not.toHaveProperty('f:status');
    const ns = api.patch(
      api.rt('', 'v1', 'namespaces'),
      '',
      'team',
      'apply',
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'team' }, status: { phase: 'Terminating' } },
      { manager: 'flotilla' },
    ).object;
    expect(ns['status']).toEqual({ phase: 'Active' });
  });

  it('rejects bad apply requests with the apiserver messages', () => {
    const bad = (body: JsonObject, manager = 'x'): string => {
      try {
        api.patch(deployments, 'default', 'app', 'apply', body, { manager });
      } catch (err) {
        if (err instanceof StatusError) return `${err.code} ${err.message}`;
      }
      return 'no error';
    };
    expect(bad({ apiVersion: 'apps/v1beta1', kind: 'Deployment', metadata: { name: 'app' } })).toBe(
      '400 Incorrect version specified in apply patch. Specified patch version: apps/v1beta1, expected: apps/v1',
    );
    expect(
      bad({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'app', managedFields: [] } }),
    ).toBe('400 metadata.managedFields must be nil');
    expect(bad({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'app' } }, '')).toBe(
      '422 PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch',
    );
  });

  it('folds Secret stringData into data while the applier owns stringData', () => {
    const secrets = api.rt('', 'v1', 'secrets');
    const s: Obj = api.patch(secrets, 'default', 'creds', 'apply', fixture('secret.yaml'), {
      manager: 'flotilla',
    }).object;
    expect(s['data']).toEqual({ password: Buffer.from('hunter2').toString('base64') });
    expect(s['type']).toBe('Opaque');
    expect(s).not.toHaveProperty('stringData');
    expect(s['metadata']['managedFields'][0]['fieldsV1']).toEqual({ 'f:stringData': { 'f:password': {} } });
  });

  it('records Update managers for non-apply writes and takes the fields from others', () => {
    apply('flotilla', fixture('app-v1.yaml'));
    const scaled = api.writeScale(
      deployments,
      'default',
      'app',
      { patch: { type: 'merge', body: { spec: { replicas: 9 } } } },
      { manager: 'hpa' },
    );
    expect(scaled).toMatchObject({
      kind: 'Scale',
      apiVersion: 'autoscaling/v1',
      spec: { replicas: 9 },
      status: { selector: 'app=app' },
    });
    const d: Obj = api.get(deployments, 'default', 'app');
    expect(d['metadata']['generation']).toBe(2);
    const hpa = (d['metadata']['managedFields'] as Obj[]).find((m) => m['manager'] === 'hpa');
    expect(hpa).toMatchObject({
      operation: 'Update',
      apiVersion: 'apps/v1',
      subresource: 'scale',
      fieldsV1: { 'f:spec': { 'f:replicas': {} } },
    });
    const flotilla = (d['metadata']['managedFields'] as Obj[]).find((m) => m['manager'] === 'flotilla');
    expect(flotilla?.['fieldsV1']['f:spec']['f:replicas']).toBeUndefined();
  });
});
