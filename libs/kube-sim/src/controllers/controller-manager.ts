import { performance } from 'node:perf_hooks';
import { type ClusterApi } from '../api/cluster-api.js';
import { getPath, type JsonObject } from '../json.js';
import { type StoreEvent } from '../store/object-store.js';
import { ControllerContext } from './controller-context.js';
import { reconcileDeployments, reconcileReplicaSets } from './deployment.js';
import { reconcileInfrastructure, reconcileLifecycle } from './lifecycle.js';
import { LifecycleTrigger } from './lifecycle-trigger.js';
import { reconcileAutoscaler, webhookMutator, type OtherWriters } from './other-writers.js';
import { reconcilePods } from './pods.js';
import { type Reconcilable } from './scheduler.js';
import { reconcileDaemonSets, reconcileJobs, reconcileStatefulSets } from './workloads.js';

export type ControllerName =
  | 'lifecycle'
  | 'deployments'
  | 'replicasets'
  | 'statefulsets'
  | 'daemonsets'
  | 'jobs'
  | 'pods'
  | 'infrastructure'
  | 'autoscaler';

interface Controller {
  name: ControllerName;
  /** Resources (`group/plural`) whose writes give it work; lifecycle is told by its LifecycleTrigger. */
  inputs: readonly string[];
  /** When set, only writes of objects it accepts give it work. */
  concerns?: (o: JsonObject) => boolean;
  run(ctx: ControllerContext, writers: OtherWriters): void;
}

/** In pass order: a controller sees what the ones before it wrote in the same pass. */
const CONTROLLERS: readonly Controller[] = [
  { name: 'lifecycle', inputs: [], run: reconcileLifecycle },
  { name: 'deployments', inputs: ['apps/deployments', 'apps/replicasets'], run: reconcileDeployments },
  { name: 'replicasets', inputs: ['apps/replicasets', '/pods'], run: reconcileReplicaSets },
  { name: 'statefulsets', inputs: ['apps/statefulsets', '/pods'], run: reconcileStatefulSets },
  { name: 'daemonsets', inputs: ['apps/daemonsets', '/pods'], run: reconcileDaemonSets },
  { name: 'jobs', inputs: ['batch/jobs', '/pods'], run: reconcileJobs },
  { name: 'pods', inputs: ['/pods'], run: reconcilePods },
  {
    name: 'infrastructure',
    inputs: ['/persistentvolumeclaims', '/services'],
    // PVCs bind, LoadBalancer Services get an address: other Services are none of its business.
    concerns: (o) => o['kind'] !== 'Service' || getPath(o, ['spec', 'type']) === 'LoadBalancer',
    run: reconcileInfrastructure,
  },
  { name: 'autoscaler', inputs: ['apps/deployments'], run: reconcileAutoscaler },
];

/** Which controllers a write to each resource may concern. */
const BY_INPUT = new Map<string, Controller[]>();
for (const c of CONTROLLERS) for (const r of c.inputs) BY_INPUT.set(r, [...(BY_INPUT.get(r) ?? []), c]);

/** What the controllers of one cluster have done so far (tests and benchmarks read it). */
export interface ControllerStats {
  /** Passes run by the scheduler. */
  passes: number;
  /** Runs of each controller (a pass runs only the controllers with work). */
  runs: Record<ControllerName, number>;
  /** Wall-clock milliseconds spent in passes (they are synchronous, so this is their CPU time on an idle machine). */
  busyMs: number;
}

/**
 * Every simulated controller of one cluster, run as one pass by the shared scheduler. A pass runs
 * only the controllers with work: those whose input resources were written since they last ran,
 * those that asked to be woken (`ctx.wakeIn`), and every one after `wakeAll` (a poke, a clock
 * advance, start). A write to a ConfigMap, a Secret or a ClusterIP Service wakes no controller.
 */
export class ControllerManager implements Reconcilable {
  readonly writers: OtherWriters = {};
  /** Turn off to freeze the cluster (objects stay as written, no status progress). */
  enabled = true;
  private readonly dirty = new Set<ControllerName>(CONTROLLERS.map((c) => c.name));
  private readonly lifecycle: LifecycleTrigger;
  private readonly counters: ControllerStats = {
    passes: 0,
    runs: Object.fromEntries(CONTROLLERS.map((c) => [c.name, 0])) as Record<ControllerName, number>,
    busyMs: 0,
  };

  constructor(readonly api: ClusterApi) {
    api.mutators.push(webhookMutator(this.writers));
    this.lifecycle = new LifecycleTrigger(api.store.entries());
  }

  /** Records a store event; true when some controller has work because of it (wake the scheduler). */
  observe(e: StoreEvent): boolean {
    let woken = false;
    for (const c of BY_INPUT.get(e.resource) ?? [])
      if (!c.concerns || c.concerns(e.object)) {
        this.dirty.add(c.name);
        woken = true;
      }
    if (this.lifecycle.observe(e)) {
      this.dirty.add('lifecycle');
      woken = true;
    }
    return woken;
  }

  /** Gives every controller a run on the next pass (after a poke or a clock advance). */
  wakeAll(): void {
    for (const c of CONTROLLERS) this.dirty.add(c.name);
  }

  stats(): ControllerStats {
    return { ...this.counters, runs: { ...this.counters.runs } };
  }

  reconcile(): number | undefined {
    if (!this.enabled) return undefined;
    const started = performance.now();
    const ctx = new ControllerContext(this.api);
    try {
      for (const c of CONTROLLERS) {
        // Checked just before each controller runs: writes by earlier ones in this pass count.
        if (!this.dirty.delete(c.name)) continue;
        ctx.current = c.name;
        this.counters.runs[c.name]++;
        try {
          c.run(ctx, this.writers);
        } catch (err) {
          this.dirty.add(c.name);
          throw err;
        }
      }
    } finally {
      // Whoever asked to be woken runs again next pass, whatever else changed by then.
      for (const n of ctx.woken) this.dirty.add(n as ControllerName);
      this.counters.passes++;
      this.counters.busyMs += performance.now() - started;
    }
    return ctx.nextWake;
  }
}
