import { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type KubeObject, assignmentSchema, CLIENT_SIDE_APPLY_FIELD_MANAGER } from '@flotilla/contract';
import { clientSideApplyPatch } from '@flotilla/diff';
import { type SimClusterHandle, startSimCluster } from '@flotilla/kube-sim';
import { type HealthAssessor } from '../health/target-health.js';
import { type KubeClient, createKubeClient } from '../kube/kube-client.js';
import { defaultDiffer, defaultHealthAssessor } from '../lib-adapters.js';
import { driftOptionsOf } from './apply-mode.js';
import { loadFixture } from '../testing/agent-harness.js';
import { Kubectl } from '../testing/kubectl.js';
import { dryRunSync } from './dry-run-sync.js';
import { prepareObject } from './prepare-object.js';
import { syncTarget } from './sync-target.js';

const OPTIONS = 'argocd.argoproj.io/sync-options';
const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration';

type Managed = { manager: string; operation: string };
const managersOf = (o: KubeObject | undefined): string[] =>
  ((o?.metadata['managedFields'] as Managed[] | undefined) ?? []).map((m) => `${m.manager}:${m.operation}`);

const namespace = (name: string): KubeObject => ({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } });

/** The shop's web Deployment as Git declares it; `options` goes into the sync-options annotation. */
function web(spec: { image: string; labels: Record<string, string>; replicas?: number }, options?: string) {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: {
      name: 'web',
      labels: spec.labels,
      ...(options ? { annotations: { [OPTIONS]: options } } : {}),
    },
    spec: {
      ...(spec.replicas === undefined ? {} : { replicas: spec.replicas }),
      selector: { matchLabels: { app: 'web' } },
      template: {
        metadata: { labels: { app: 'web' } },
        spec: { containers: [{ name: 'web', image: spec.image, ports: [{ containerPort: 80 }] }] },
      },
    },
  } satisfies KubeObject;
}

const [gadgetCrd] = loadFixture('gadget-crd.yaml') as [KubeObject];
const gadget = (spec: Record<string, unknown>): KubeObject => ({
  apiVersion: 'example.com/v1',
  kind: 'Gadget',
  metadata: { name: 'g', annotations: { [OPTIONS]: 'ServerSideApply=false' } },
  spec,
});

function assignment(name: string, syncPolicy: Record<string, unknown> = {}) {
  return assignmentSchema.parse({
    targetId: `t-${name}`,
    name,
    appSet: 'csa',
    namespace: name,
    revision: 'r1',
    bundleDigest: `sha256:${'0'.repeat(64)}`,
    syncPolicy: { prune: true, ...syncPolicy },
  });
}

/** Argo CD's ServerSideApply=false against a simulated cluster, checked with the real kubectl (#14). */
describe('ServerSideApply=false: client-side apply', () => {
  let sim: SimClusterHandle;
  let kube: KubeClient;
  let health: HealthAssessor;
  let kubectl: Kubectl;
  beforeAll(async () => {
    health = await defaultHealthAssessor();
    sim = await startSimCluster({ name: 'client-side-apply' });
    const kc = new KubeConfig();
    kc.loadFromString(sim.kubeconfig());
    kube = createKubeClient(kc);
    kubectl = new Kubectl(sim.kubeconfig());
    await kube.apply(gadgetCrd);
  });
  afterAll(async () => {
    await sim.stop();
    kubectl.cleanup();
  });

  const sync = (a: ReturnType<typeof assignment>, manifests: KubeObject[]) =>
    syncTarget({ kube, health, assignment: a, manifests, inventory: [], trigger: 'auto', pollMs: 20 });
  const getWeb = async (ns: string) =>
    (await kube.get({ apiVersion: 'apps/v1', kind: 'Deployment', namespace: ns, name: 'web' })) as KubeObject;
  /** The object as the agent writes it (namespace, tracking label and annotation), as kubectl input. */
  const asApplied = async (a: ReturnType<typeof assignment>, m: KubeObject) =>
    JSON.stringify(await prepareObject(kube, a, m));

  /**
   * The patch the real kubectl sends for `kubectl apply` of this object, read from its request log
   * (a server-side dry run: nothing changes).
   */
  const kubectlPatch = async (applied: string): Promise<unknown> => {
    const r = await kubectl.run(['apply', '--dry-run=server', '-v=9', '-f', '-'], applied);
    expect(r.code, r.stderr).toBe(0);
    const bodies = [...r.stderr.matchAll(/"Request Body" body=("(?:[^"\\]|\\.)*")/g)]
      .map((m) => JSON.parse(m[1] as string) as string)
      .filter((b) => b !== '');
    expect(bodies).toHaveLength(1);
    return JSON.parse(bodies[0] as string);
  };

  it('creates with last-applied, removes what Git dropped, keeps what others added, and kubectl agrees', async () => {
    const a = assignment('shop');
    const v1 = web(
      { image: 'nginx:1.27', labels: { app: 'web', team: 'shop' }, replicas: 2 },
      'ServerSideApply=false',
    );
    const first = await sync(a, [namespace('shop'), v1]);
    expect(first.report.outcome).toBe('Succeeded');
    const created = await getWeb('shop');
    expect(managersOf(created)).toContain(`${CLIENT_SIDE_APPLY_FIELD_MANAGER}:Update`);
    expect(managersOf(created).filter((m) => m.endsWith(':Apply'))).toEqual([]);
    expect(JSON.parse(created.metadata.annotations?.[LAST_APPLIED] ?? '{}')).toEqual(
      JSON.parse(JSON.stringify(await prepareObject(kube, a, v1))),
    );
    // kubectl reads the annotation as its own: applying the same object again changes nothing.
    expect(await kubectl.ok(['apply', '-f', '-'], await asApplied(a, v1))).toBe(
      'deployment.apps/web unchanged\n',
    );

    // Other actors: a label by hand, a sidecar injected (a strategic merge patch adding a container).
    await kubectl.ok(['label', 'deployment', 'web', '-n', 'shop', 'owner=ops']);
    await kubectl.ok([
      'patch',
      'deployment',
      'web',
      '-n',
      'shop',
      '--type=strategic',
      '-p',
      JSON.stringify({
        spec: { template: { spec: { containers: [{ name: 'proxy', image: 'envoy:1.32' }] } } },
      }),
    ]);

    // Git drops the team label and replicas, and moves the image on.
    const v2 = web({ image: 'nginx:1.28', labels: { app: 'web' } }, 'ServerSideApply=false');
    // The patch Flotilla sends is the one kubectl sends for the same object.
    expect(clientSideApplyPatch(await prepareObject(kube, a, v2), await getWeb('shop'))).toEqual({
      type: 'strategic',
      patch: await kubectlPatch(await asApplied(a, v2)),
    });
    // Before the sync, drift sees the dropped label through the annotation (no Apply entry to read).
    const pending = defaultDiffer(
      await prepareObject(kube, a, v2),
      await getWeb('shop'),
      driftOptionsOf(v2, a),
    );
    expect(pending.differences.map((d) => d.path)).toEqual(
      expect.arrayContaining([
        '/metadata/labels/team',
        '/spec/replicas',
        '/spec/template/spec/containers/0/image',
      ]),
    );
    const second = await sync(a, [namespace('shop'), v2]);
    expect(second.report.outcome).toBe('Succeeded');
    expect(second.report.resources.find((r) => r.kind === 'Deployment')?.action).toBe('applied');
    const live = await getWeb('shop');
    expect(live.metadata.labels).toMatchObject({ app: 'web', owner: 'ops' });
    expect(live.metadata.labels).not.toHaveProperty('team');
    expect((live['spec'] as { replicas: number }).replicas).toBe(1); // no longer declared: the default
    const containers = (
      live['spec'] as { template: { spec: { containers: { name: string; image: string }[] } } }
    ).template.spec.containers;
    expect(containers.map((c) => `${c.name}=${c.image}`)).toEqual(['web=nginx:1.28', 'proxy=envoy:1.32']);

    // What kubectl would do with the same manifest now: nothing.
    const diff = await kubectl.run(['diff', '-f', '-'], await asApplied(a, v2));
    expect(diff).toMatchObject({ code: 0, stdout: '' });
    // kubectl apply itself sends only `$setElementOrder/containers` (the sidecar makes the lists'
    // lengths differ, which kubectl counts as an order change): the server stores nothing, so
    // kubectl's manager never shows up (a resourceVersion check would race the controller's status).
    const beforeKubectl = await getWeb('shop');
    await kubectl.ok(['apply', '-f', '-'], await asApplied(a, v2));
    const afterKubectl = await getWeb('shop');
    expect(managersOf(afterKubectl)).not.toContain('kubectl-client-side-apply:Update');
    expect(afterKubectl['spec']).toEqual(beforeKubectl['spec']);
    expect(afterKubectl.metadata.annotations?.[LAST_APPLIED]).toBe(
      beforeKubectl.metadata.annotations?.[LAST_APPLIED],
    );

    // Drift compares what was declared: in sync now, and a hand edit of a declared field is drift.
    const declared = await prepareObject(kube, a, v2);
    expect(defaultDiffer(declared, live, driftOptionsOf(v2, a)).inSync).toBe(true);
    await kubectl.ok(['set', 'image', 'deployment/web', '-n', 'shop', 'web=nginx:by-hand']);
    const edited = defaultDiffer(declared, await getWeb('shop'), driftOptionsOf(v2, a));
    expect(edited.differences.map((d) => d.path)).toEqual(['/spec/template/spec/containers/0/image']);

    // Healed, then a sync with nothing to change: reported unchanged (the write, if any, is a no-op).
    await sync(a, [namespace('shop'), v2]);
    const third = await sync(a, [namespace('shop'), v2]);
    expect(third.report.resources.find((r) => r.kind === 'Deployment')?.action).toBe('unchanged');
  });

  it('a Deployment Git switches to Recreate loses its defaulted rollingUpdate ($retainKeys), as with kubectl', async () => {
    const a = assignment('recreate');
    const v1 = web({ image: 'nginx:1.27', labels: { app: 'web' } }, 'ServerSideApply=false');
    expect((await sync(a, [namespace('recreate'), v1])).report.outcome).toBe('Succeeded');
    expect((await getWeb('recreate'))['spec']).toMatchObject({ strategy: { type: 'RollingUpdate' } });
    const v2 = { ...v1, spec: { ...v1.spec, strategy: { type: 'Recreate' } } };
    expect(clientSideApplyPatch(await prepareObject(kube, a, v2), await getWeb('recreate'))).toEqual({
      type: 'strategic',
      patch: await kubectlPatch(await asApplied(a, v2)),
    });
    const r = await sync(a, [namespace('recreate'), v2]);
    expect(r.report.resources.find((x) => x.kind === 'Deployment')).toMatchObject({ action: 'applied' });
    expect((await getWeb('recreate'))['spec']).toMatchObject({ strategy: { type: 'Recreate' } });
    expect((await getWeb('recreate'))['spec']).not.toHaveProperty(['strategy', 'rollingUpdate']);
  });

  it('per target, with an object that asks for server-side apply: the object’s own option wins', async () => {
    const a = assignment('mixed', { serverSideApply: false });
    const cm = (name: string, options?: string): KubeObject => ({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name, ...(options ? { annotations: { [OPTIONS]: options } } : {}) },
      data: { a: '1' },
    });
    const r = await sync(a, [namespace('mixed'), cm('client'), cm('server', 'ServerSideApply=true')]);
    expect(r.report.outcome).toBe('Succeeded');
    const get = (name: string) => kube.get({ apiVersion: 'v1', kind: 'ConfigMap', namespace: 'mixed', name });
    const client = await get('client');
    expect(client?.metadata.annotations).toHaveProperty([LAST_APPLIED]);
    expect(managersOf(client)).toEqual([`${CLIENT_SIDE_APPLY_FIELD_MANAGER}:Update`]);
    const server = await get('server');
    expect(server?.metadata.annotations).not.toHaveProperty([LAST_APPLIED]);
    expect(managersOf(server)).toEqual(['flotilla:Apply']);
  });

  it('a custom resource gets a JSON merge patch: lists replaced, a dropped field deleted, others kept', async () => {
    const a = assignment('gadgets');
    const first = await sync(a, [
      namespace('gadgets'),
      gadget({ size: 3, colour: 'blue', tags: ['a', 'b'] }),
    ]);
    expect(first.report.outcome).toBe('Succeeded');
    await kubectl.ok([
      'patch',
      'gadget',
      'g',
      '-n',
      'gadgets',
      '--type=merge',
      '-p',
      '{"spec":{"owner":"ops"}}',
    ]);
    // kube-sim, as the API server, refuses a strategic merge patch for a custom resource (415).
    const v2 = gadget({ size: 4, tags: ['a'] });
    const before = await kube.get({
      apiVersion: 'example.com/v1',
      kind: 'Gadget',
      namespace: 'gadgets',
      name: 'g',
    });
    expect(clientSideApplyPatch(await prepareObject(kube, a, v2), before)).toEqual({
      type: 'merge',
      patch: await kubectlPatch(await asApplied(a, v2)),
    });
    const second = await sync(a, [namespace('gadgets'), v2]);
    expect(second.report.outcome).toBe('Succeeded');
    const live = await kube.get({
      apiVersion: 'example.com/v1',
      kind: 'Gadget',
      namespace: 'gadgets',
      name: 'g',
    });
    expect(live?.['spec']).toEqual({ size: 4, tags: ['a'], owner: 'ops' });
    expect(await kubectl.ok(['apply', '-f', '-'], await asApplied(a, v2))).toBe(
      'gadget.example.com/g unchanged\n',
    );
  });

  it('Force=true re-creates an object whose patch the API refuses, client-side again', async () => {
    const a = assignment('jobs', { serverSideApply: false });
    const job = (image: string): KubeObject => ({
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: { name: 'migrate', annotations: { [OPTIONS]: 'Force=true' } },
      spec: { template: { spec: { restartPolicy: 'Never', containers: [{ name: 'migrate', image }] } } },
    });
    const getJob = () =>
      kube.get({ apiVersion: 'batch/v1', kind: 'Job', namespace: 'jobs', name: 'migrate' });
    const first = await sync(a, [namespace('jobs'), job('migrate:1')]);
    expect(first.report.outcome).toBe('Succeeded');
    const uid = (await getJob())?.metadata.uid;

    const forced = await sync(a, [namespace('jobs'), job('migrate:2')]);
    expect(forced.report.resources.find((r) => r.kind === 'Job')?.message).toMatch(
      /^re-created \(Force=true\) after the API refused the change: .*field is immutable/,
    );
    const live = await getJob();
    expect(live?.metadata.uid).not.toBe(uid);
    expect(managersOf(live)).toContain(`${CLIENT_SIDE_APPLY_FIELD_MANAGER}:Update`);
    expect(JSON.parse(live?.metadata.annotations?.[LAST_APPLIED] ?? '{}')).toMatchObject({
      spec: { template: { spec: { containers: [{ name: 'migrate', image: 'migrate:2' }] } } },
    });
    const again = await sync(a, [namespace('jobs'), job('migrate:2')]);
    expect(again.report.resources.find((r) => r.kind === 'Job')).toMatchObject({ action: 'unchanged' });
  });

  it('asks for strict field validation: a typo fails the create and the patch; Validate=false drops it', async () => {
    const a = assignment('typos', { serverSideApply: false });
    const typo = (name: string, spec: Record<string, unknown>, options?: string): KubeObject => ({
      apiVersion: 'example.com/v1',
      kind: 'Gadget',
      metadata: { name, ...(options ? { annotations: { [OPTIONS]: options } } : {}) },
      spec,
    });
    const get = (name: string) =>
      kube.get({ apiVersion: 'example.com/v1', kind: 'Gadget', namespace: 'typos', name });
    const strict = await sync(a, [namespace('typos'), typo('strict', { size: 1, colur: 'red' })]);
    expect(strict.report.resources.find((r) => r.name === 'strict')?.message).toContain(
      'unknown field "spec.colur"',
    );
    expect(await get('strict')).toBeUndefined();

    const lenient = [namespace('typos'), typo('lenient', { size: 1, colur: 'red' }, 'Validate=false')];
    expect((await sync(a, lenient)).report.outcome).toBe('Succeeded');
    expect((await get('lenient'))?.['spec']).toEqual({ size: 1 });
    // Patched as well: the strict write of an existing object is refused, nothing of it written.
    await sync(a, [namespace('typos'), typo('strict', { size: 1 })]);
    const patched = await sync(a, [namespace('typos'), typo('strict', { size: 2, colur: 'red' })]);
    expect(patched.report.resources.find((r) => r.name === 'strict')?.message).toContain(
      'unknown field "spec.colur"',
    );
    expect((await get('strict'))?.['spec']).toEqual({ size: 1 });
  });

  it('a hook of a client-side target is created client-side too', async () => {
    const a = assignment('hooks', { serverSideApply: false });
    const hook: KubeObject = {
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: { name: 'seed', annotations: { 'argocd.argoproj.io/hook': 'PreSync' } },
      spec: {
        template: { spec: { restartPolicy: 'Never', containers: [{ name: 'seed', image: 'seed:1' }] } },
      },
    };
    const r = await sync(a, [namespace('hooks'), hook]);
    expect(r.report.outcome).toBe('Succeeded');
    const live = await kube.get({ apiVersion: 'batch/v1', kind: 'Job', namespace: 'hooks', name: 'seed' });
    expect(live?.metadata.annotations).toHaveProperty([LAST_APPLIED]);
    expect(managersOf(live)).toContain(`${CLIENT_SIDE_APPLY_FIELD_MANAGER}:Update`);
  });

  it('a dry run sends the same writes with dryRun=All and changes nothing', async () => {
    const a = assignment('dry');
    const v1 = web({ image: 'nginx:1.27', labels: { app: 'web' } }, 'ServerSideApply=false');
    await sync(a, [namespace('dry'), v1]);
    const before = await getWeb('dry');
    const newConfig: KubeObject = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'new', annotations: { [OPTIONS]: 'ServerSideApply=false' } },
      data: { a: '1' },
    };
    const run = (manifests: KubeObject[]) =>
      dryRunSync({ kube, assignment: a, manifests, inventory: [], prune: true });
    const same = await run([namespace('dry'), v1]);
    expect(same.resources.find((r) => r.kind === 'Deployment')).toMatchObject({ action: 'unchanged' });

    const v2 = web({ image: 'nginx:1.28', labels: { app: 'web' } }, 'ServerSideApply=false');
    const changed = await run([namespace('dry'), v2, newConfig]);
    expect(changed.resources.find((r) => r.kind === 'Deployment')).toMatchObject({
      action: 'applied',
      message: 'would be changed',
    });
    expect(changed.resources.find((r) => r.kind === 'ConfigMap')).toMatchObject({
      action: 'applied',
      message: 'would be created',
    });
    // Its controller moves the status meanwhile; what the sync would write is untouched.
    const after = await getWeb('dry');
    expect(after['spec']).toEqual(before['spec']);
    expect(after.metadata.annotations?.[LAST_APPLIED]).toBe(before.metadata.annotations?.[LAST_APPLIED]);
    expect(
      await kube.get({ apiVersion: 'v1', kind: 'ConfigMap', namespace: 'dry', name: 'new' }),
    ).toBeUndefined();
  });
});
