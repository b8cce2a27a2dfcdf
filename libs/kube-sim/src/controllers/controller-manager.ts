import { type ClusterApi } from '../api/cluster-api.js';
import { type Reconcilable } from './scheduler.js';

/** Switches for writers other than the GitOps agent, so drift-noise handling can be tested for real. */
export interface OtherWriters {
  /** A simulated autoscaler: sets `spec.replicas` of every Deployment to `replicas` (manager `sim-autoscaler`, via /scale). */
  autoscaler?: { replicas: number; namespace?: string };
  /** A simulated mutating webhook on Deployments: injects an annotation and, optionally, a sidecar container. */
  webhook?: { annotation?: [string, string]; sidecar?: { name: string; image: string } };
}

/** Placeholder controller set; filled in by the workload controllers. */
export class ControllerManager implements Reconcilable {
  readonly writers: OtherWriters = {};
  constructor(readonly api: ClusterApi) {}
  reconcile(): number | undefined {
    return undefined;
  }
}
