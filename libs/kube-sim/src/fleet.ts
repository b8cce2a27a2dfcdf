import { type SimClock } from './clock.js';
import { type SimClusterHandle, startSimCluster } from './cluster.js';

export interface SimFleetOptions {
  count: number;
  /** Default `sim-`: clusters are named `sim-1` … `sim-N`. */
  namePrefix?: string;
  kubeconfigDir: string;
  clock?: SimClock;
  /** The Kubernetes version each cluster reports, by index (default kube-sim's own). */
  kubernetesVersion?: (index: number) => string | undefined;
}

export interface SimFleet {
  clusters: SimClusterHandle[];
  stop(): Promise<void>;
}

/** Starts `count` clusters in this process, each on its own port with its own kubeconfig. */
export async function startSimFleet(opts: SimFleetOptions): Promise<SimFleet> {
  const prefix = opts.namePrefix ?? 'sim-';
  const clusters: SimClusterHandle[] = [];
  const stop = async (): Promise<void> => {
    await Promise.all(clusters.map((c) => c.stop()));
  };
  try {
    // Started in small batches: a thousand listens at once only adds contention.
    const batch = 50;
    for (let i = 0; i < opts.count; i += batch) {
      const names = Array.from(
        { length: Math.min(batch, opts.count - i) },
        (_, j) => `${prefix}${i + j + 1}`,
      );
      const started = await Promise.all(
        names.map((name, j) =>
          startSimCluster({
            name,
            kubeconfigDir: opts.kubeconfigDir,
            ...(opts.clock ? { clock: opts.clock } : {}),
            ...withVersion(opts.kubernetesVersion?.(i + j)),
          }),
        ),
      );
      clusters.push(...started);
    }
  } catch (err) {
    await stop();
    throw err;
  }
  return { clusters, stop };
}

const withVersion = (v: string | undefined) => (v ? { kubernetesVersion: v } : {});
