import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type SimClusterHandle, startSimFleet } from '@flotilla/kube-sim';
import { applyOverHttp, configMap, deployment, type KubeObject, namespace, service } from '../sim-objects.js';
import { figure } from '../stats.js';
import { type BenchFn, type Figure } from '../types.js';

const APPS = 10;

/** One app as the fleet bench ships it: a namespace, a Deployment, a Service and a ConfigMap. */
function app(i: number, release: string, image: string): KubeObject[] {
  const ns = `app-${String(i).padStart(3, '0')}`;
  return [
    namespace(ns),
    deployment('web', ns, image),
    service('web', ns),
    configMap('settings', ns, { release, tier: 'standard' }),
  ];
}

function cpuMs(since: NodeJS.CpuUsage): number {
  const d = process.cpuUsage(since);
  return (d.user + d.system) / 1000;
}

function totals(clusters: SimClusterHandle[]): { passes: number; runs: number; busyMs: number } {
  let passes = 0;
  let runs = 0;
  let busyMs = 0;
  for (const c of clusters) {
    const s = c.controllerStats();
    passes += s.passes;
    runs += Object.values(s.runs).reduce((a, b) => a + b, 0);
    busyMs += s.busyMs;
  }
  return { passes, runs, busyMs };
}

/** Resolves once no cluster has run a controller pass for 300 ms (its last writes are settled). */
async function settled(clusters: SimClusterHandle[]): Promise<void> {
  let last = -1;
  for (;;) {
    await new Promise((resolve) => setTimeout(resolve, 300));
    const now = totals(clusters).passes;
    if (now === last) return;
    last = now;
  }
}

/**
 * What the simulator costs the process that hosts it, per unit of GitOps work: N clusters in this
 * process (as the fleet bench runs them), 10 apps each, server-side applied over HTTP with `fetch`
 * while the controllers run. A round applies every app of every cluster once; its CPU (the whole
 * process, the HTTP client included, until the controllers have settled) is divided by the apps.
 */
export const simApply: BenchFn = async (ctx) => {
  const count = ctx.params['clusters'] ?? 10;
  const rounds = ctx.quick ? 2 : 5;
  const dir = await mkdtemp(join(tmpdir(), 'flotilla-bench-sim-apply-'));
  const fleet = await startSimFleet({ count, namePrefix: 'apply-', kubeconfigDir: dir });
  const clusters = fleet.clusters;
  const apps = count * APPS;
  const round = async (release: string, image: string): Promise<void> => {
    await Promise.all(
      clusters.map(async (c) => {
        for (let a = 0; a < APPS; a++) for (const o of app(a, release, image)) await applyOverHttp(c.url, o);
      }),
    );
  };
  /** Per-app process CPU of each round, controller runs and pass time over all of them. */
  const measure = async (
    label: string,
    releases: [string, string][],
  ): Promise<{ perApp: number[]; runs: number; passes: number; busyMs: number }> => {
    ctx.progress(`${label}: ${releases.length} rounds of ${apps} app applies`);
    const perApp: number[] = [];
    const before = totals(clusters);
    for (const [release, image] of releases) {
      await settled(clusters);
      const t = process.cpuUsage();
      await round(release, image);
      await settled(clusters);
      perApp.push(cpuMs(t) / apps);
    }
    const after = totals(clusters);
    return {
      perApp,
      runs: after.runs - before.runs,
      passes: after.passes - before.passes,
      busyMs: after.busyMs - before.busyMs,
    };
  };
  try {
    ctx.progress(`${count} clusters listening; applying ${APPS} apps to each and rolling them out`);
    await round('r0', 'ghcr.io/example/web:1.0.0');
    await settled(clusters);
    await round('warm', 'ghcr.io/example/web:1.0.0');

    const cm = await measure(
      'only the ConfigMap changes',
      Array.from({ length: rounds }, (_, r) => [`r${r + 1}`, 'ghcr.io/example/web:1.0.0']),
    );
    const same = await measure('nothing changes', [
      [`r${rounds}`, 'ghcr.io/example/web:1.0.0'],
      [`r${rounds}`, 'ghcr.io/example/web:1.0.0'],
    ]);
    const rollout = await measure(
      'a new image rolls out',
      Array.from({ length: Math.max(2, rounds - 2) }, (_, r) => [
        `r${rounds}`,
        `ghcr.io/example/web:2.${r}.0`,
      ]),
    );

    ctx.progress('full controller passes: every controller of every cluster, 20 times');
    await settled(clusters);
    const fullPass: number[] = [];
    for (let k = 0; k < 20; k++) {
      const before = totals(clusters).passes;
      const t = process.cpuUsage();
      for (const c of clusters) c.poke();
      await settled(clusters);
      const passes = totals(clusters).passes - before;
      if (passes > 0) fullPass.push(cpuMs(t) / passes);
    }

    const bench = 'sim-apply';
    const command = 'npm run bench -- --only sim-apply';
    const where = `${count} clusters × ${APPS} apps in one process, SSA over HTTP`;
    const cpuNote =
      'process CPU of the round (the fetch client in the same process included) until the controllers settle, ÷ apps';
    const figures: Figure[] = [
      figure({
        id: `sim-apply.config-change-cpu.${count}`,
        bench,
        title: `CPU per app apply when only its ConfigMap changed (4 applies), ${where}`,
        unit: 'ms CPU',
        fleetSize: count,
        samples: cm.perApp,
        notes: `${cpuNote}; controller runs in these rounds: ${cm.runs}`,
        command,
      }),
      figure({
        id: `sim-apply.unchanged-cpu.${count}`,
        bench,
        title: `CPU per app apply when nothing changed (4 no-op applies), ${where}`,
        unit: 'ms CPU',
        fleetSize: count,
        samples: same.perApp,
        notes: `${cpuNote}; controller runs in these rounds: ${same.runs}`,
        command,
      }),
      figure({
        id: `sim-apply.rollout-cpu.${count}`,
        bench,
        title: `CPU per app apply with a new image, its rollout included, ${where}`,
        unit: 'ms CPU',
        fleetSize: count,
        samples: rollout.perApp,
        notes: `${cpuNote}; ${(rollout.passes / (count * rollout.perApp.length)).toFixed(0)} controller passes per cluster and round, ${(rollout.busyMs / Math.max(1, rollout.passes)).toFixed(2)} ms of wall time each`,
        command,
      }),
      figure({
        id: `sim-apply.full-pass-ms.${count}`,
        bench,
        title: `one controller pass running every controller over a cluster with ${APPS} apps (a poke)`,
        unit: 'ms CPU',
        fleetSize: count,
        samples: fullPass,
        notes: 'process CPU of a round of pokes (nothing else runs meanwhile) ÷ the passes it ran',
        command,
      }),
    ];
    return { figures, series: [], remarks: [] };
  } finally {
    await fleet.stop();
    await rm(dir, { recursive: true, force: true });
  }
};
