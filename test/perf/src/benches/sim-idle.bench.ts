import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startSimFleet } from '@flotilla/kube-sim';
import { procMemory, sampleIdle } from '../proc-stats.js';
import { applyOverHttp, configMap, deployment, namespace } from '../sim-objects.js';
import { figure } from '../stats.js';
import { type BenchFn } from '../types.js';

function gc(): void {
  (globalThis as { gc?: () => void }).gc?.();
}

/**
 * One process serving N idle simulated clusters, each holding a namespace, a ConfigMap and a
 * one-replica Deployment (so its controllers have run): RSS and CPU while nothing happens.
 */
export const simIdle: BenchFn = async (ctx) => {
  const count = ctx.params['clusters'] ?? 10;
  const windowMs = ctx.quick ? 4_000 : 10_000;
  const dir = await mkdtemp(join(tmpdir(), 'flotilla-bench-sim-'));
  gc();
  const baseline = procMemory(process.pid).rssMB;
  const fleet = await startSimFleet({ count, namePrefix: 'idle-', kubeconfigDir: dir });
  try {
    ctx.progress(`${count} clusters listening; seeding each with 3 objects`);
    for (let i = 0; i < fleet.clusters.length; i += 50) {
      await Promise.all(
        fleet.clusters.slice(i, i + 50).map(async (c) => {
          await applyOverHttp(c.url, namespace('app'));
          await applyOverHttp(c.url, configMap('settings', 'app', { mode: 'idle' }));
          await applyOverHttp(c.url, deployment('web', 'app', 'ghcr.io/example/web:1.0.0'));
        }),
      );
    }
    // Let the controllers finish the rollouts, then measure a quiet process.
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    gc();
    ctx.progress(`sampling ${windowMs / 1000} s of idle`);
    const samples = await sampleIdle(process.pid, windowMs, 10);
    const rss = samples.map((s) => s.rssMB);
    const command = `npm run bench -- --only sim`;
    const bench = 'sim';
    const perCluster = rss.map((r) => ((r - baseline) * 1000) / count);
    const figures = [
      figure({
        id: `sim.idle-rss.${count}`,
        bench,
        title: `kube-sim process RSS, ${count} idle clusters`,
        unit: 'MB',
        fleetSize: count,
        samples: rss,
        ...(count === 1000
          ? {
              target: {
                on: 'max' as const,
                op: '<' as const,
                value: 1000,
                text: '1,000 clusters < 1 GB RSS',
              },
            }
          : {}),
        notes: `process RSS before any cluster: ${baseline.toFixed(1)} MB`,
        command,
      }),
      figure({
        id: `sim.idle-rss-per-cluster.${count}`,
        bench,
        title: `kube-sim RSS per idle cluster (above the empty process), ${count} clusters`,
        unit: 'kB',
        fleetSize: count,
        samples: perCluster,
        command,
      }),
      figure({
        id: `sim.idle-cpu.${count}`,
        bench,
        title: `kube-sim process CPU, ${count} idle clusters`,
        unit: '% of a core',
        fleetSize: count,
        samples: samples.map((s) => s.cpuPercent),
        command,
      }),
    ];
    const med = (id: string): number => figures.find((f) => f.id === id)?.median ?? 0;
    return {
      figures,
      series: [
        {
          chart: 'sim-rss',
          name: 'kube-sim RSS (MB)',
          unit: 'MB',
          points: [{ x: count, y: med(`sim.idle-rss.${count}`) }],
        },
        {
          chart: 'sim-per-cluster',
          name: 'RSS per idle cluster (kB)',
          unit: 'kB',
          points: [{ x: count, y: med(`sim.idle-rss-per-cluster.${count}`) }],
        },
        {
          chart: 'sim-cpu',
          name: 'kube-sim idle CPU (% of a core)',
          unit: '%',
          points: [{ x: count, y: med(`sim.idle-cpu.${count}`) }],
        },
      ],
      remarks: [],
    };
  } finally {
    await fleet.stop();
    await rm(dir, { recursive: true, force: true });
  }
};
