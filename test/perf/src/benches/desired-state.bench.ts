import { generate, parseApplicationSet, type ClusterInfo, type RepositoryFiles } from '@flotilla/generators';
import { waitFor } from '@flotilla/cli/fleet';
import { appName, fleetAppSet, type AppShape } from '../app-repo.js';
import { HubStack } from '../hub-stack.js';
import { figure } from '../stats.js';
import { helmRenderFigures } from './helm-render.js';
import { type BenchFn, type BenchOutput, type Figure } from '../types.js';

const COMMAND = 'npm run bench -- --only desired';

interface AppSetView {
  status: string;
  targetCount: number;
  error?: { message?: string } | null;
}

/**
 * Desired state at fleet scale: `generate` alone for clusters × app directories, then the hub's
 * whole expansion (generators, render, one transaction into PostgreSQL) for the same shape, against
 * a bare multi-row INSERT of the very rows it wrote; how many bundles the fleet needed; and Helm
 * charts shared by every cluster or rendered per cluster (helm-render.ts).
 */
export const desiredStateBench: BenchFn = async (ctx) => {
  const clusters = ctx.quick ? 100 : 1000;
  const shape: AppShape = { apps: 20, deployments: 1, services: 1, configMaps: 1 };
  const targets = clusters * shape.apps;
  const bench = 'desired';
  const figures: Figure[] = [];

  // 1. Pure expansion.
  const inventory: ClusterInfo[] = Array.from({ length: clusters }, (_, i) => ({
    name: `c-${i + 1}`,
    server: `https://c-${i + 1}.example:6443`,
    labels: { region: i % 2 ? 'eu' : 'us' },
    annotations: {},
  }));
  const files = Array.from({ length: shape.apps }, (_, i) => `apps/${appName(i)}/manifests.yaml`);
  const repo: RepositoryFiles = {
    listFiles: () => files,
    readFile: () => '',
  };
  const appSet = parseApplicationSet(fleetAppSet('bench', 'git://127.0.0.1/fleet.git'));
  const pure: number[] = [];
  const deadline = performance.now() + 30_000;
  for (let r = 0; r < (ctx.quick ? 3 : 10) && performance.now() < deadline; r++) {
    const t0 = performance.now();
    const result = generate(appSet, { clusters: inventory, repository: () => repo });
    pure.push(performance.now() - t0);
    if (result.targets.length !== targets)
      throw new Error(`generate made ${result.targets.length} targets, expected ${targets}`);
  }
  ctx.progress(
    `generate ${targets} targets: median ${[...pure].sort((a, b) => a - b)[pure.length >> 1]?.toFixed(0)} ms`,
  );
  figures.push(
    figure({
      id: 'desired.generate',
      bench,
      title: `generate(): ${clusters} clusters × ${shape.apps} directories = ${targets} targets (pure)`,
      unit: 'ms',
      fleetSize: clusters,
      samples: pure,
      command: COMMAND,
    }),
  );

  // 2. The hub's expansion into PostgreSQL, on a ladder of fleet sizes: a size that does not finish
  // within the cap is recorded as the cap (missed) and the larger sizes are not tried.
  const ladder = ctx.quick ? [10] : [10, 100, 1000];
  const capMs = ctx.quick ? 60_000 : 90_000;
  const series: BenchOutput['series'] = [];
  const remarks: string[] = [];
  const stack = await HubStack.start(shape, ctx.progress);
  try {
    const repoId = await stack.addRepository();
    let registered = 0;
    for (const size of ladder) {
      // The previous size's appset goes first: new clusters would otherwise re-expand it over and
      // over while they register, and that work would land in this size's measurement.
      await stack.api.request('DELETE', '/api/v1/appsets/bench').catch(() => undefined);
      await waitFor(
        'the targets to go',
        async () =>
          Number(
            (await stack.sql((c) => c.query<{ n: string }>('SELECT count(*) AS n FROM "Target"'))).rows[0]?.n,
          ) === 0
            ? true
            : undefined,
        { timeoutMs: 120_000, intervalMs: 200 },
      );
      for (; registered < size; registered += 20) {
        await Promise.all(
          inventory.slice(registered, Math.min(size, registered + 20)).map((c) =>
            stack.api.request('POST', '/api/v1/clusters', {
              name: c.name,
              server: c.server,
              labels: c.labels,
            }),
          ),
        );
      }
      registered = size;
      const want = size * shape.apps;
      const rendersBefore = await rendersSoFar(stack);
      const t0 = performance.now();
      await stack.api.createAppSet(fleetAppSet('bench', stack.repoUrl));
      let finished = true;
      try {
        await waitFor(
          `the hub to expand ${want} targets`,
          async () => {
            const v = await stack.api.request<AppSetView>('GET', '/api/v1/appsets/bench');
            if (v.status === 'Error') throw new Error(`expansion failed: ${v.error?.message ?? ''}`);
            return v.status === 'Ready' && v.targetCount === want ? true : undefined;
          },
          { timeoutMs: capMs, intervalMs: 50 },
        );
      } catch (err) {
        if (!(err instanceof Error) || !err.message.startsWith('timed out')) throw err;
        finished = false;
      }
      const ms = finished ? performance.now() - t0 : capMs;
      ctx.progress(
        `hub expansion of ${want} targets (${size} clusters): ${finished ? `${ms.toFixed(0)} ms` : `not done in ${capMs / 1000} s`}`,
      );
      series.push({
        chart: 'desired-expansion',
        name: 'hub expansion (ms)',
        unit: 'ms',
        points: [{ x: size, y: ms }],
      });
      const renders = (await rendersSoFar(stack)) - rendersBefore;
      const floor = finished ? [await bareInsert(stack)] : [];
      const bundles = Number(
        (await stack.sql((c) => c.query<{ n: string }>('SELECT count(*) AS n FROM "Bundle"'))).rows[0]?.n,
      );
      const target = {
        on: 'p99' as const,
        op: '<' as const,
        value: 5_000,
        text: '20,000 targets (1,000 clusters) < 5 s on 2 cores',
      };
      figures.push(
        figure({
          id: `desired.hub-expansion.${size}`,
          bench,
          title: `hub expansion into PostgreSQL: appset POST → ${want} targets stored (Ready), ${size} clusters × ${shape.apps} apps`,
          unit: 'ms',
          fleetSize: size,
          samples: [ms],
          ...(size === 1000 ? { target } : {}),
          ...(finished
            ? {
                floor: {
                  what: `bare multi-row INSERT of the same ${want} Target rows (batches of 1,000, one transaction)`,
                  samples: floor,
                },
              }
            : {}),
          notes: finished
            ? 'includes the git read, the render of every app directory, the transaction and the 50 ms poll that sees it'
            : `did not finish within ${capMs / 1000} s; counted as ${capMs / 1000} s`,
          command: COMMAND,
        }),
      );
      if (finished)
        figures.push(
          figure({
            id: `desired.renders-per-app.${size}`,
            bench,
            title: `renders per app directory, ${want} targets (${size} clusters share each app)`,
            unit: 'renders',
            fleetSize: size,
            samples: [renders / shape.apps],
            ...(size === ladder.at(-1) && {
              target: {
                on: 'max' as const,
                op: '=' as const,
                value: 1,
                text: `${size.toLocaleString('en')} targets sharing one app render it exactly once`,
              },
            }),
            notes: `${renders} renders counted by the hub (flotilla_expansion_renders_total) for ${shape.apps} app directories`,
            command: COMMAND,
          }),
          figure({
            id: `desired.bundles-per-app.${size}`,
            bench,
            title: `bundles stored per app directory, ${want} targets (${size} clusters share each app)`,
            unit: 'bundles',
            fleetSize: size,
            samples: [bundles / shape.apps],
            target: { on: 'max', op: '=', value: 1, text: 'exactly 1 per app' },
            notes: `${bundles} Bundle rows in PostgreSQL`,
            command: COMMAND,
          }),
        );
      const next = ladder.find((n) => n > size);
      if (next === undefined) {
        if (finished) figures.push(await reExpansion(stack, repoId, size, want, capMs, ctx.progress));
        break;
      }
      // Small sizes are mostly fixed cost (queue, Git, renders), so no projection from them: only a
      // size that did not finish within the cap stops the ladder.
      if (!finished) {
        const why = `${size} clusters did not finish within ${capMs / 1000} s`;
        for (const bigger of ladder.filter((n) => n > size)) {
          remarks.push(`hub expansion at ${bigger} clusters not run: ${why}`);
          if (bigger === 1000)
            figures.push(
              figure({
                id: `desired.hub-expansion.${bigger}`,
                bench,
                title: `hub expansion into PostgreSQL: ${bigger * shape.apps} targets, ${bigger} clusters (not run)`,
                unit: 'ms',
                fleetSize: bigger,
                samples: [capMs],
                target,
                notes: `${why}; counted as the ${capMs / 1000} s cap`,
                command: COMMAND,
              }),
            );
        }
        break;
      }
    }
    // Helm on the clusters registered by now (1,000 in a full run).
    const helm = await helmRenderFigures(stack, repoId, registered, capMs * 3, ctx.progress);
    figures.push(...helm.figures);
    remarks.push(...helm.remarks);
    return { figures, series, remarks };
  } finally {
    await stack.stop();
  }
};

/**
 * The update path at full size: a commit changes every app, the repository is refreshed, and the
 * clock runs until every stored target points at the new commit (one UPDATE per 1,000 rows).
 */
async function reExpansion(
  stack: HubStack,
  repoId: string,
  size: number,
  want: number,
  capMs: number,
  progress: (line: string) => void,
): Promise<Figure> {
  const sha = await stack.repo.commitRelease('r1');
  const t0 = performance.now();
  await stack.api.request('POST', `/api/v1/repositories/${repoId}/refresh`);
  let finished = true;
  try {
    await waitFor(
      `every target at ${sha.slice(0, 8)}`,
      async () =>
        Number(
          (
            await stack.sql((c) =>
              c.query<{ n: string }>('SELECT count(*) AS n FROM "Target" WHERE "desiredRevision" = $1', [
                sha,
              ]),
            )
          ).rows[0]?.n,
        ) === want
          ? true
          : undefined,
      { timeoutMs: capMs, intervalMs: 100 },
    );
  } catch (err) {
    if (!(err instanceof Error) || !err.message.startsWith('timed out')) throw err;
    finished = false;
  }
  const ms = finished ? performance.now() - t0 : capMs;
  progress(
    `re-expansion after a commit, ${want} targets updated: ${finished ? `${ms.toFixed(0)} ms` : 'not done'}`,
  );
  return figure({
    id: `desired.hub-re-expansion.${size}`,
    bench: 'desired',
    title: `hub re-expansion after a commit: refresh → all ${want} targets at the new commit, ${size} clusters`,
    unit: 'ms',
    fleetSize: size,
    samples: [ms],
    notes: finished
      ? 'includes the fetch, the render of every changed app directory, the transaction (20 UPDATE … FROM unnest statements) and the 100 ms poll'
      : `did not finish within ${capMs / 1000} s; counted as ${capMs / 1000} s`,
    command: COMMAND,
  });
}

/** The hub's count of renders started, from its Prometheus metrics. */
async function rendersSoFar(stack: HubStack): Promise<number> {
  const text = await (await fetch(`${stack.hubUrl}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith('flotilla_expansion_renders_total '));
  if (!line) throw new Error('the hub exposes no flotilla_expansion_renders_total metric');
  return Number(line.split(' ')[1]);
}

/** Reads back the rows the hub wrote and inserts them into a copy of the table, timed. */
async function bareInsert(stack: HubStack): Promise<number> {
  return stack.sql(async (c) => {
    const rows = (await c.query<Record<string, unknown>>('SELECT * FROM "Target"')).rows;
    await c.query('DROP TABLE IF EXISTS bench_target');
    await c.query('CREATE TABLE bench_target (LIKE "Target" INCLUDING ALL)');
    const first = rows[0];
    if (!first) return 0;
    const cols = Object.keys(first);
    const t0 = performance.now();
    await c.query('BEGIN');
    for (let i = 0; i < rows.length; i += 1000) {
      const chunk = rows.slice(i, i + 1000);
      const values: unknown[] = [];
      const tuples = chunk.map((row, j) => {
        for (const col of cols) {
          const v = row[col];
          values.push(v !== null && typeof v === 'object' && !(v instanceof Date) ? JSON.stringify(v) : v);
        }
        return `(${cols.map((_, k) => `$${j * cols.length + k + 1}`).join(',')})`;
      });
      await c.query(
        `INSERT INTO bench_target (${cols.map((col) => `"${col}"`).join(',')}) VALUES ${tuples.join(',')}`,
        values,
      );
    }
    await c.query('COMMIT');
    const ms = performance.now() - t0;
    await c.query('DROP TABLE bench_target');
    return ms;
  });
}
