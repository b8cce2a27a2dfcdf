import { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type KubeObject, assignmentSchema } from '@flotilla/contract';
import { type SimClusterHandle, startSimCluster } from '@flotilla/kube-sim';
import { type HealthAssessor } from '../health/target-health.js';
import { type KubeClient, createKubeClient } from '../kube/kube-client.js';
import { defaultDiffer, defaultHealthAssessor } from '../lib-adapters.js';
import { driftOptionsOf } from './apply-mode.js';
import { dryRunSync } from './dry-run-sync.js';
import { prepareObject } from './prepare-object.js';
import { syncTarget } from './sync-target.js';

const OPTIONS = 'argocd.argoproj.io/sync-options';

const widgetCrd: KubeObject = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'widgets.example.com' },
  spec: {
    group: 'example.com',
    scope: 'Namespaced',
    names: { plural: 'widgets', singular: 'widget', kind: 'Widget', listKind: 'WidgetList' },
    versions: [
      {
        name: 'v1',
        served: true,
        storage: true,
        schema: {
          openAPIV3Schema: {
            type: 'object',
            properties: {
              spec: { type: 'object', properties: { size: { type: 'integer' }, colour: { type: 'string' } } },
            },
          },
        },
      },
    ],
  },
};
const namespace = (name: string): KubeObject => ({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
/** A Widget whose manifest misspells `colour` (a field the CRD's schema does not declare). */
const typoWidget = (name: string, options?: string): KubeObject => ({
  apiVersion: 'example.com/v1',
  kind: 'Widget',
  metadata: { name, ...(options ? { annotations: { [OPTIONS]: options } } : {}) },
  spec: { size: 3, colur: 'blue' },
});

function assignment(name: string, syncPolicy: Record<string, unknown> = {}) {
  return assignmentSchema.parse({
    targetId: `t-${name}`,
    name,
    appSet: 'validate',
    namespace: name,
    revision: 'r1',
    bundleDigest: `sha256:${'0'.repeat(64)}`,
    syncPolicy: { prune: true, ...syncPolicy },
  });
}

/** Argo CD's Validate option against a simulated cluster that validates fields as the apiserver does (#14). */
describe('Validate', () => {
  let sim: SimClusterHandle;
  let kube: KubeClient;
  let health: HealthAssessor;
  beforeAll(async () => {
    health = await defaultHealthAssessor();
    sim = await startSimCluster({ name: 'validate' });
    const kc = new KubeConfig();
    kc.loadFromString(sim.kubeconfig());
    kube = createKubeClient(kc);
    await kube.apply(widgetCrd);
  });
  afterAll(async () => {
    await sim.stop();
  });

  const sync = (a: ReturnType<typeof assignment>, manifests: KubeObject[]) =>
    syncTarget({ kube, health, assignment: a, manifests, inventory: [], trigger: 'auto', pollMs: 20 });
  const liveWidget = (ns: string, name: string) =>
    kube.get({ apiVersion: 'example.com/v1', kind: 'Widget', namespace: ns, name });

  it('by default a field the schema does not declare fails the object, naming it, and nothing is written', async () => {
    const a = assignment('strict');
    const r = await sync(a, [namespace('strict'), typoWidget('w')]);
    const w = r.report.resources.find((x) => x.kind === 'Widget');
    expect(w?.action).toBe('failed');
    expect(w?.message).toContain('strict decoding error: unknown field "spec.colur"');
    expect(r.report.outcome).not.toBe('Succeeded');
    expect(await liveWidget('strict', 'w')).toBeUndefined();

    // A dry run says the same before anything is tried.
    const dry = await dryRunSync({
      kube,
      assignment: a,
      manifests: [namespace('strict'), typoWidget('w')],
      inventory: [],
      prune: true,
    });
    expect(dry.resources.find((x) => x.kind === 'Widget')?.message).toContain('unknown field "spec.colur"');
  });

  it("Validate=false on the object: the server drops the field and applies the rest, and drift doesn't count it", async () => {
    const a = assignment('lenient');
    const desired = typoWidget('w', 'Validate=false');
    const r = await sync(a, [namespace('lenient'), desired]);
    expect(r.report.outcome).toBe('Succeeded');
    const live = await liveWidget('lenient', 'w');
    expect(live?.['spec']).toEqual({ size: 3 });
    // The server dropped the field, so the object (as the agent declares it) is not drifted...
    const declared = await prepareObject(kube, a, desired);
    expect(defaultDiffer(declared, live as KubeObject, driftOptionsOf(desired, a)).inSync).toBe(true);
    // ...where with validation on the same comparison calls it drift (declared, not live).
    const strictView = { ...driftOptionsOf(desired, a), unknownFieldsDropped: false };
    expect(defaultDiffer(declared, live as KubeObject, strictView).differences.map((d) => d.path)).toEqual([
      '/spec/colur',
    ]);
  });

  it('Validate=false for the whole target (syncOptions), with Replace=true as well', async () => {
    const a = assignment('lenient-target', { validate: false });
    const r = await sync(a, [namespace('lenient-target'), typoWidget('a'), typoWidget('b', 'Replace=true')]);
    expect(r.report.outcome).toBe('Succeeded');
    expect((await liveWidget('lenient-target', 'a'))?.['spec']).toEqual({ size: 3 });
    expect((await liveWidget('lenient-target', 'b'))?.['spec']).toEqual({ size: 3 });
    // The object's own Validate=true wins over the target's.
    const strict = await sync(a, [namespace('lenient-target'), typoWidget('c', 'Validate=true')]);
    expect(strict.report.resources.find((x) => x.name === 'c')?.action).toBe('failed');
  });
});
