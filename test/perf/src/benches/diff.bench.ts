import { startSimCluster } from '@flotilla/kube-sim';
import { diffObjects } from '@flotilla/diff';
import { applyOverHttp, deployment, namespace, objectPath, type KubeObject } from '../sim-objects.js';
import { figure } from '../stats.js';
import { type BenchFn } from '../types.js';

/**
 * `diffObjects` over realistic Deployments: the live side is what the simulator returns after a
 * server-side apply (defaults, status, managedFields, a ReplicaSet rollout), half of them drifted
 * by another manager, as the agent sees them after a watch event.
 */
export const diffThroughput: BenchFn = async (ctx) => {
  const sim = await startSimCluster({ name: 'diff-bench' });
  try {
    await applyOverHttp(sim.url, namespace('shop'), 'flotilla');
    const pairs: { desired: KubeObject; live: unknown }[] = [];
    for (let i = 0; i < 10; i++) {
      const desired = deployment(`web-${i}`, 'shop', `ghcr.io/example/web:1.${i}.0`, 2);
      await applyOverHttp(sim.url, desired, 'flotilla');
      if (i % 2 === 1) {
        // Another manager changes the image: the diff has something to find.
        const drifted = deployment(`web-${i}`, 'shop', `ghcr.io/example/web:9.9.9`, 2);
        await applyOverHttp(sim.url, drifted, 'kubectl-edit');
      }
      pairs.push({ desired, live: undefined });
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
    for (const p of pairs) p.live = await (await fetch(`${sim.url}${objectPath(p.desired)}`)).json();
    const drifted = pairs.filter((p) => !diffObjects(p.desired, p.live).inSync).length;
    if (drifted !== 5) throw new Error(`expected 5 drifted Deployments of 10, diff found ${drifted}`);

    const batch = 500;
    const maxBatches = ctx.quick ? 10 : 40;
    const deadline = performance.now() + (ctx.quick ? 5_000 : 20_000);
    const rates: number[] = [];
    // One untimed batch first so the JIT has compiled the hot paths.
    for (let i = 0; i < batch; i++) diffObjects(pairs[i % 10]?.desired, pairs[i % 10]?.live);
    while (rates.length < maxBatches && performance.now() < deadline) {
      const t0 = performance.now();
      for (let i = 0; i < batch; i++) {
        const p = pairs[i % pairs.length];
        diffObjects(p?.desired, p?.live);
      }
      rates.push(batch / ((performance.now() - t0) / 1000));
    }
    ctx.progress(`${rates.length} batches of ${batch} diffs`);
    return {
      figures: [
        figure({
          id: 'diff.deployments-per-second',
          bench: 'diff',
          title: 'diffObjects on live Deployments (half drifted), one core',
          unit: 'objects/s',
          fleetSize: 1,
          samples: rates,
          notes: `each run = ${batch} diffs; the p99 column is the 99th percentile of per-run rates (higher is better; the slow tail is the min)`,
          command: 'npm run bench -- --only diff',
        }),
      ],
      series: [],
      remarks: [],
    };
  } finally {
    await sim.stop();
  }
};
