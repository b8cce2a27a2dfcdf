import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';
import { AppRepo, fleetAppSet } from '../app-repo.js';
import { figure } from '../stats.js';
import { type BenchFn } from '../types.js';

const CLI = fileURLToPath(new URL('../../../../apps/cli/dist/main.js', import.meta.url));
const REPO_URL = 'https://git.example/bench/fleet.git';

/**
 * `flotilla plan` between two commits of one repository holding the fleet (one appset putting 10
 * apps on every cluster) and the apps: every app's ConfigMaps change, so every target changes and
 * every one of its objects is diffed. The whole command as CI runs it (a process, Git, render,
 * report), no cluster and no hub. Issue #26: under 10 s for 100 clusters × 10 apps on 2 cores,
 * under 60 s for 1,000 clusters.
 */
export const planBench: BenchFn = async (ctx) => {
  const clusters = ctx.params['clusters'] ?? 100;
  const apps = 10;
  const root = mkdtempSync(join(tmpdir(), 'flotilla-bench-plan-'));
  try {
    const repo = await AppRepo.create(join(root, 'repo'), {
      apps,
      deployments: 1,
      services: 1,
      configMaps: 1,
    });
    mkdirSync(join(repo.dir, 'fleet'), { recursive: true });
    writeFileSync(join(repo.dir, 'fleet', 'appset.yaml'), stringify(fleetAppSet('bench', REPO_URL)));
    const base = await repo.commitRelease('r1');
    const head = await repo.commitRelease('r2');
    const inventory = join(root, 'clusters.json');
    writeFileSync(
      inventory,
      JSON.stringify(
        Array.from({ length: clusters }, (_, i) => ({
          name: `c${String(i).padStart(4, '0')}`,
          server: `https://c${i}.example:6443`,
          labels: { env: i % 10 === 0 ? 'canary' : 'prod' },
        })),
      ),
    );
    const args = [
      CLI,
      'plan',
      '--fleet',
      repo.dir,
      '--path',
      'fleet',
      '--base',
      base,
      '--head',
      head,
      '--repo',
      `${REPO_URL}=${repo.dir}`,
      '--clusters',
      inventory,
      '-o',
      'json',
    ];
    const runs = ctx.quick ? 1 : clusters >= 1000 ? 2 : 5;
    const seconds: number[] = [];
    for (let i = 0; i < runs; i++) {
      const t0 = performance.now();
      const r = spawnSync(process.execPath, args, { encoding: 'utf8', maxBuffer: 1024 * 1024 * 1024 });
      const elapsed = (performance.now() - t0) / 1000;
      if (r.status !== 0)
        throw new Error(`flotilla plan exited ${r.status}: ${r.stderr}${r.stdout.slice(0, 500)}`);
      const report = JSON.parse(r.stdout) as { summary: { targets: { changed: number } } };
      if (report.summary.targets.changed !== clusters * apps)
        throw new Error(
          `expected ${clusters * apps} changed targets, the plan says ${report.summary.targets.changed}`,
        );
      seconds.push(elapsed);
      ctx.progress(
        `run ${i + 1}/${runs}: ${elapsed.toFixed(1)} s, ${(r.stdout.length / 1e6).toFixed(1)} MB of JSON`,
      );
    }
    const limit = clusters >= 1000 ? 60 : 10;
    return {
      figures: [
        figure({
          id: `plan.seconds.${clusters}`,
          bench: 'plan',
          title: `flotilla plan, ${clusters} clusters × ${apps} apps, every target changed`,
          unit: 's',
          fleetSize: clusters,
          samples: seconds,
          target: { on: 'max', op: '<', value: limit, text: `every run < ${limit} s` },
          notes: `${clusters * apps} targets generated at each of two revisions and diffed per object; renders shared between targets whose sources agree, as on the hub (${apps} per revision: plain YAML, a Namespace, a Deployment, a Service, a ConfigMap each); one process, as CI runs it`,
          command: 'npm run bench -- --only plan',
        }),
      ],
      series: [],
      remarks: [],
    };
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
};
