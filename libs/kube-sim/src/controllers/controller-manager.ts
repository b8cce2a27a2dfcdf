import { type ClusterApi } from '../api/cluster-api.js';
import { ControllerContext } from './controller-context.js';
import { reconcileDeployments, reconcileReplicaSets } from './deployment.js';
import { reconcileInfrastructure, reconcileLifecycle } from './lifecycle.js';
import { reconcileAutoscaler, webhookMutator } from './other-writers.js';
import { reconcilePods } from './pods.js';
import { type Reconcilable } from './scheduler.js';
import { reconcileDaemonSets, reconcileJobs, reconcileStatefulSets } from './workloads.js';

/** Switches for writers other than the GitOps agent, so drift-noise handling can be tested for real. */
export interface OtherWriters {
  /** A simulated autoscaler: sets `spec.replicas` of every Deployment to `replicas` (manager `sim-autoscaler`, via /scale). */
  autoscaler?: { replicas: number; namespace?: string };
  /** A simulated mutating webhook on Deployments: injects an annotation and, optionally, a sidecar container. */
  webhook?: { annotation?: [string, string]; sidecar?: { name: string; image: string } };
}

/** Every simulated controller of one cluster, run as one pass by the shared scheduler. */
export class ControllerManager implements Reconcilable {
  readonly writers: OtherWriters = {};
  /** Turn off to freeze the cluster (objects stay as written, no status progress). */
  enabled = true;

  constructor(readonly api: ClusterApi) {
    api.mutators.push(webhookMutator(this.writers));
  }

  reconcile(): number | undefined {
    if (!this.enabled) return undefined;
    const ctx = new ControllerContext(this.api);
    reconcileLifecycle(ctx);
    reconcileDeployments(ctx);
    reconcileReplicaSets(ctx);
    reconcileStatefulSets(ctx);
    reconcileDaemonSets(ctx);
    reconcileJobs(ctx);
    reconcilePods(ctx);
    reconcileInfrastructure(ctx);
    reconcileAutoscaler(ctx, this.writers);
    return ctx.nextWake;
  }
}
