/* eslint-disable @typescript-eslint/no-unnecessary-type-assertion --
   client-node's generic signatures infer from the argument; the casts name the kind being read. */
import * as k8s from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimCluster, type SimClusterHandle } from './cluster.js';

type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

function deployment(name: string, replicas = 1, image = 'nginx:1.27'): k8s.V1Deployment {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace: 'default', labels: { app: name } },
    spec: {
      replicas,
      selector: { matchLabels: { app: name } },
      template: { metadata: { labels: { app: name } }, spec: { containers: [{ name: 'app', image }] } },
    },
  };
}

const rv = (o: k8s.KubernetesObject): string | undefined => o.metadata?.resourceVersion;

async function apiError(p: Promise<unknown>): Promise<{ code: number; body: Obj }> {
  try {
    await p;
  } catch (err) {
    if (err instanceof k8s.ApiException)
      return { code: err.code, body: JSON.parse(err.body as string) as Obj };
    throw err;
  }
  throw new Error('expected an ApiException');
}

describe('@kubernetes/client-node against a simulated cluster', () => {
  let cluster: SimClusterHandle;
  let kc: k8s.KubeConfig;
  let objects: k8s.KubernetesObjectApi;

  beforeAll(async () => {
    cluster = await startSimCluster({ name: 'client-node-conformance', freezeObjects: true });
    kc = new k8s.KubeConfig();
    kc.loadFromString(cluster.kubeconfig());
    objects = k8s.KubernetesObjectApi.makeApiClient(kc);
  });

  afterAll(async () => {
    await cluster.stop();
  });

  it('server-side applies through KubernetesObjectApi as the flotilla manager; dry-run changes nothing', async () => {
    const dry = await objects.patch(
      deployment('api', 2),
      undefined,
      'All',
      'flotilla',
      true,
      k8s.PatchStrategy.ServerSideApply,
    );
    expect(dry.metadata?.resourceVersion).toBeUndefined();
    expect(dry.metadata?.uid).toMatch(/^[0-9a-f-]{36}$/);
    expect(
      (
        await apiError(
          objects.read({
            apiVersion: 'apps/v1',
            kind: 'Deployment',
            metadata: { name: 'api', namespace: 'default' },
          }),
        )
      ).code,
    ).toBe(404);

    const applied = (await objects.patch(
      deployment('api', 2),
      undefined,
      undefined,
      'flotilla',
      true,
      k8s.PatchStrategy.ServerSideApply,
    )) as k8s.V1Deployment;
    expect(applied.spec?.replicas).toBe(2);
    expect(applied.metadata?.managedFields?.map((m) => [m.manager, m.operation])).toEqual([
      ['flotilla', 'Apply'],
    ]);

    // ConfigMaps have no controller, so their resourceVersion moves only with our writes.
    const cm = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'settings', namespace: 'default' },
      data: { a: '1' },
    };
    const first = await objects.patch(
      cm,
      undefined,
      undefined,
      'flotilla',
      true,
      k8s.PatchStrategy.ServerSideApply,
    );
    const again = await objects.patch(
      cm,
      undefined,
      undefined,
      'flotilla',
      true,
      k8s.PatchStrategy.ServerSideApply,
    );
    expect(rv(again)).toBe(rv(first));
    const dryChange = (await objects.patch(
      { ...cm, data: { a: '2' } },
      undefined,
      'All',
      'flotilla',
      true,
      k8s.PatchStrategy.ServerSideApply,
    )) as k8s.V1ConfigMap;
    expect(rv(dryChange)).toBe(rv(first));
    expect(dryChange.data).toEqual({ a: '2' });
    const read = (await objects.read(cm)) as k8s.V1ConfigMap;
    expect(read.data).toEqual({ a: '1' });
    expect(rv(read)).toBe(rv(first));
  });

  it('round-trips typed objects whose Date fields come back with milliseconds', async () => {
    const read = (await objects.read({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'settings', namespace: 'default' },
    })) as k8s.V1ConfigMap;
    expect(read.metadata?.creationTimestamp).toBeInstanceOf(Date);
    // Sent back as `…:29.000Z`: normalised to whole seconds, so the write is a no-op.
    const replaced = (await objects.replace(read)) as k8s.V1ConfigMap;
    expect(replaced.metadata?.resourceVersion).toBe(read.metadata?.resourceVersion);
    const raw = cluster.api.get(cluster.api.rt('', 'v1', 'configmaps'), 'default', 'settings');
    expect((raw['metadata'] as Obj)['creationTimestamp']).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
  });

  it('refuses a stale resourceVersion with 409 Conflict and answers 404 as a Status', async () => {
    const apps = kc.makeApiClient(k8s.AppsV1Api);
    const d = await apps.readNamespacedDeployment({ name: 'api', namespace: 'default' });
    d.metadata!.resourceVersion = '1';
    const stale = await apiError(
      apps.replaceNamespacedDeployment({ name: 'api', namespace: 'default', body: d }),
    );
    expect(stale.code).toBe(409);
    expect(stale.body).toMatchObject({
      kind: 'Status',
      status: 'Failure',
      reason: 'Conflict',
      code: 409,
      message:
        'Operation cannot be fulfilled on deployments.apps "api": the object has been modified; please apply your changes to the latest version and try again',
    });
    const missing = await apiError(apps.readNamespacedDeployment({ name: 'nope', namespace: 'default' }));
    expect(missing).toEqual({
      code: 404,
      body: {
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Failure',
        message: 'deployments.apps "nope" not found',
        reason: 'NotFound',
        details: { name: 'nope', group: 'apps', kind: 'deployments' },
        code: 404,
      },
    });
  });

  it('creates from generateName as the apiserver does: a fresh 5-character suffix, the prefix cut to fit 63', async () => {
    const core = kc.makeApiClient(k8s.CoreV1Api);
    // A namespace of its own: the other cases count what `default` holds.
    await core.createNamespace({ body: { metadata: { name: 'generated' } } });
    const make = (generateName: string): Promise<k8s.V1ConfigMap> =>
      core.createNamespacedConfigMap({
        namespace: 'generated',
        body: { metadata: { generateName }, data: { k: 'v' } },
      });
    const first = await make('migrate-');
    const second = await make('migrate-');
    expect(first.metadata?.name).toMatch(/^migrate-[bcdfghjklmnpqrstvwxz2456789]{5}$/);
    expect(second.metadata?.name).toMatch(/^migrate-[bcdfghjklmnpqrstvwxz2456789]{5}$/);
    expect(second.metadata?.name).not.toBe(first.metadata?.name);
    expect(first.metadata?.generateName).toBe('migrate-');
    const long = await make(`${'x'.repeat(70)}-`);
    expect(long.metadata?.name).toHaveLength(63);
    expect(long.metadata?.name?.startsWith('x'.repeat(58))).toBe(true);
    const nameless = await apiError(
      core.createNamespacedConfigMap({ namespace: 'generated', body: { metadata: {}, data: {} } }),
    );
    expect(nameless.code).toBe(422);
    expect(nameless.body['details']).toMatchObject({
      causes: [{ field: 'metadata.name', message: 'Required value: name or generateName is required' }],
    });
  });

  it('applies typed JSON patches (the typed default) and reports SSA conflicts with another manager', async () => {
    const apps = kc.makeApiClient(k8s.AppsV1Api);
    const patched = await apps.patchNamespacedDeployment({
      name: 'api',
      namespace: 'default',
      body: [{ op: 'replace', path: '/spec/replicas', value: 3 }],
      fieldManager: 'hand-edit',
    });
    expect(patched.spec?.replicas).toBe(3);
    const conflict = await apiError(
      objects.patch(
        deployment('api', 2),
        undefined,
        undefined,
        'flotilla',
        false,
        k8s.PatchStrategy.ServerSideApply,
      ),
    );
    expect(conflict.code).toBe(409);
    expect(conflict.body).toMatchObject({
      reason: 'Conflict',
      message: 'Apply failed with 1 conflict: conflict with "hand-edit" using apps/v1: .spec.replicas',
      details: {
        causes: [
          {
            reason: 'FieldManagerConflict',
            message: 'conflict with "hand-edit" using apps/v1',
            field: '.spec.replicas',
          },
        ],
      },
    });
    const forced = (await objects.patch(
      deployment('api', 2),
      undefined,
      undefined,
      'flotilla',
      true,
      k8s.PatchStrategy.ServerSideApply,
    )) as k8s.V1Deployment;
    expect(forced.spec?.replicas).toBe(2);
    expect(forced.metadata?.managedFields?.some((m) => m.manager === 'hand-edit')).toBe(false);
  });

  it('lists with label selectors and a list resourceVersion; deletes with a Status', async () => {
    await objects.create({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'a', namespace: 'default', labels: { team: 'x' } },
      data: { k: 'v' },
    });
    await objects.create({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'b', namespace: 'default', labels: { team: 'y' } },
    });
    const core = kc.makeApiClient(k8s.CoreV1Api);
    const list = await core.listNamespacedConfigMap({ namespace: 'default', labelSelector: 'team in (x)' });
    expect(list.items.map((c) => c.metadata?.name)).toEqual(['a']);
    expect(Number(list.metadata?.resourceVersion)).toBeGreaterThan(0);
    const byField = await core.listNamespacedConfigMap({
      namespace: 'default',
      fieldSelector: 'metadata.name!=a',
    });
    expect(byField.items.map((c) => c.metadata?.name)).toEqual(['b', 'settings']);
    const status = await objects.delete({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'b', namespace: 'default' },
    });
    expect(status.status).toBe('Success');
    expect(status.details).toMatchObject({ name: 'b', kind: 'configmaps' });
  });

  it('watches from a resourceVersion, replays history, and answers 410 once it is compacted', async () => {
    const core = kc.makeApiClient(k8s.CoreV1Api);
    const start = (await core.listNamespacedConfigMap({ namespace: 'default' })).metadata!.resourceVersion!;
    await objects.patch(
      {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'a', namespace: 'default' },
        data: { k: 'v2' },
      },
      undefined,
      undefined,
      'flotilla',
      true,
      k8s.PatchStrategy.ServerSideApply,
    );
    const events: [string, Obj][] = [];
    const watch = new k8s.Watch(kc);
    const done = new Promise<unknown>((resolve) => {
      void watch
        .watch(
          '/api/v1/namespaces/default/configmaps',
          { resourceVersion: start },
          (type, obj: Obj) => {
            events.push([type, obj]);
          },
          resolve,
        )
        .then((req) => {
          void expect
            .poll(() => events.length)
            .toBeGreaterThan(0)
            .then(() => req.abort());
        });
    });
    await done;
    expect(events[0]?.[0]).toBe('MODIFIED');
    expect(events[0]?.[1]).toMatchObject({ apiVersion: 'v1', kind: 'ConfigMap', data: { k: 'v2' } });

    cluster.compactHistory();
    const gone: [string, Obj][] = [];
    await new Promise<unknown>((resolve) => {
      void watch.watch(
        '/api/v1/namespaces/default/configmaps',
        { resourceVersion: start },
        (type, obj: Obj) => gone.push([type, obj]),
        resolve,
      );
    });
    expect(gone).toEqual([
      [
        'ERROR',
        {
          kind: 'Status',
          apiVersion: 'v1',
          metadata: {},
          status: 'Failure',
          message: expect.stringMatching(/^too old resource version: \d+ \(\d+\)$/) as unknown,
          reason: 'Expired',
          code: 410,
        },
      ],
    ]);
  });

  it('informers resume from their last resourceVersion when the server closes the watch, and relist after 410', async () => {
    const apps = kc.makeApiClient(k8s.AppsV1Api);
    let lists = 0;
    const informer = k8s.makeInformer(kc, '/apis/apps/v1/namespaces/default/deployments', () => {
      lists++;
      return apps.listNamespacedDeployment({ namespace: 'default' });
    });
    const seen: string[] = [];
    let connects = 0;
    informer.on('connect', () => connects++);
    informer.on('add', (d) => seen.push(`add:${d.metadata?.name}`));
    informer.on('update', (d) => seen.push(`update:${d.metadata?.name}:${d.spec?.replicas}`));
    informer.on('error', (err) => seen.push(`error:${String(err)}`));
    await informer.start();
    await expect.poll(() => cluster.openWatches()).toBe(1);
    expect(lists).toBe(1);
    expect(seen).toContain('add:api');

    // The server side ends the stream (as after client-node's 30 s timeout): resume, no relist.
    expect(cluster.closeWatches()).toBe(1);
    await objects.patch(
      deployment('api', 4),
      undefined,
      undefined,
      'flotilla',
      true,
      k8s.PatchStrategy.ServerSideApply,
    );
    await expect.poll(() => seen.includes('update:api:4'), { timeout: 10_000 }).toBe(true);
    expect(lists).toBe(1);
    expect(connects).toBeGreaterThanOrEqual(2);

    // With the history gone the resumed watch gets 410 Expired: the informer relists.
    cluster.compactHistory();
    cluster.closeWatches();
    await expect.poll(() => lists, { timeout: 10_000 }).toBe(2);
    await objects.patch(
      deployment('api', 1),
      undefined,
      undefined,
      'flotilla',
      true,
      k8s.PatchStrategy.ServerSideApply,
    );
    await expect.poll(() => seen.includes('update:api:1'), { timeout: 10_000 }).toBe(true);
    expect(seen.filter((s) => s.startsWith('error'))).toEqual([]);
    await informer.stop();
  });

  it('resolves custom resources of a CRD created at run time', async () => {
    await objects.create({
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: 'gadgets.example.org' },
      spec: {
        group: 'example.org',
        scope: 'Namespaced',
        names: { plural: 'gadgets', singular: 'gadget', kind: 'Gadget' },
        versions: [
          {
            name: 'v1alpha1',
            served: true,
            storage: true,
            // client-node serialises through its typed model, which knows the extension only by
            // this name (the wire name would be dropped, leaving a schema that prunes every field).
            schema: { openAPIV3Schema: { type: 'object', x_kubernetes_preserve_unknown_fields: true } },
          },
        ],
      },
    } as k8s.KubernetesObject);
    const g = await objects.patch(
      {
        apiVersion: 'example.org/v1alpha1',
        kind: 'Gadget',
        metadata: { name: 'g1', namespace: 'default' },
        spec: { n: 1 },
      } as k8s.KubernetesObject,
      undefined,
      undefined,
      'flotilla',
      true,
      k8s.PatchStrategy.ServerSideApply,
    );
    expect(g).toMatchObject({
      apiVersion: 'example.org/v1alpha1',
      kind: 'Gadget',
      metadata: { generation: 1 },
      spec: { n: 1 },
    });
    const list = await objects.list('example.org/v1alpha1', 'Gadget', 'default');
    expect(list.items.map((i) => [i.kind, i.metadata?.name])).toEqual([['Gadget', 'g1']]);
  });
});
