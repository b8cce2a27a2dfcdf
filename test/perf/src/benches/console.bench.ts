import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import pg from 'pg';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { REPO_ROOT } from '@flotilla/cli/fleet';
import { HubStack } from '../hub-stack.js';
import { figure, summarize } from '../stats.js';
import { type BenchFn, type Figure, type Target } from '../types.js';

const COMMAND = 'npm run bench -- --only console';
const BENCH = 'console';
const CHROMIUM = process.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium';
const CONSOLE_DIST = join(REPO_ROOT, 'apps/console/dist');

const CLUSTERS = 1000;
const APPSETS = 10;
/** Clusters per `region` label value: a label filter answers this many. */
const REGIONS = 20;
/** Target changes a second while the matrix is open, and for how long. */
const CHANGES_PER_SECOND = 100;
const STREAM_SECONDS = 10;

const FIRST_PAGE: Target = { on: 'median', op: '<', value: 1500, text: 'median < 1.5 s (goal 1 s)' };
const LABEL_FILTER: Target = { on: 'median', op: '<', value: 300, text: 'median < 300 ms' };
const PAGE_SIZE: Target = { on: 'max', op: '<', value: 200, text: '≤ 200 KB' };
const LONG_TASK: Target = { on: 'max', op: '<', value: 50, text: 'no main-thread task over 50 ms' };
const JS_SIZE: Target = { on: 'max', op: '<', value: 250, text: '< 250 KB gzipped' };

/**
 * The browser side, installed before any page script: when the matrix's first rows appear (ms
 * since navigation began), and every main-thread task over 50 ms (the Long Tasks API reports
 * only those). Strings, because this file is compiled without the DOM's types.
 */
const PAGE_PROBES = `
  window.__bench = { firstRows: null, longTasks: [] };
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) window.__bench.longTasks.push({ at: e.startTime, ms: e.duration });
  }).observe({ type: 'longtask', buffered: true });
  new MutationObserver((_, observer) => {
    if (document.querySelector('table.matrix tbody tr')) {
      window.__bench.firstRows = performance.now();
      observer.disconnect();
    }
  }).observe(document, { childList: true, subtree: true });
`;

/**
 * Clicks "Apply filters" and resolves with the ms until the counts say `expected` clusters.
 * Timed inside the page, so the browser's remote-control round trips are not counted.
 */
const TIMED_FILTER = (expected: number) => `new Promise((resolve, reject) => {
  const counts = () => document.querySelector('[data-testid="fleet-counts"]')?.textContent ?? '';
  const done = () => counts().startsWith('${expected} clusters ');
  const t0 = performance.now();
  const observer = new MutationObserver(() => {
    if (done()) { observer.disconnect(); resolve(performance.now() - t0); }
  });
  observer.observe(document.body, { childList: true, subtree: true, characterData: true });
  [...document.querySelectorAll('button')].find((b) => b.textContent === 'Apply filters').click();
  setTimeout(() => { observer.disconnect(); reject(new Error('no answer within 10 s: ' + counts())); }, 10000);
})`;

/**
 * The console in Debian's Chromium against the real hub (its own process, PostgreSQL, Redis) with
 * 1,000 clusters × 10 ApplicationSets (10,000 targets) written straight into its database: the
 * matrix's first page after navigation, a label filter's answer, the largest API answer the views
 * fetch, main-thread tasks while 100 target changes a second stream in, and the JavaScript shipped.
 */
export const consoleBench: BenchFn = async (ctx) => {
  const figures: Figure[] = [];
  const remarks: string[] = [];
  if (!existsSync(CHROMIUM)) throw new Error(`no Chromium at ${CHROMIUM} (apt-get install chromium)`);
  if (!existsSync(join(CONSOLE_DIST, 'index.html')))
    throw new Error('the console is not built (npm run build builds it)');
  figures.push(jsSize());

  const clusters = ctx.quick ? 100 : CLUSTERS;
  const stack = await HubStack.start({ apps: 1, deployments: 1, services: 0, configMaps: 0 }, ctx.progress);
  const db = new pg.Client({ connectionString: stack.databaseUrl });
  let browser: Browser | undefined;
  try {
    await db.connect();
    const t0 = performance.now();
    await seed(db, clusters);
    ctx.progress(
      `seeded ${clusters} clusters × ${APPSETS} appsets (${clusters * APPSETS} targets) in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
    );
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--disable-background-networking'],
    });

    const apiSizes: { url: string; bytes: number }[] = [];
    /** How long the hub took over each matrix answer (request sent → last byte), to tell hub from browser. */
    const fleetMs: number[] = [];
    const newPage = async (): Promise<{ context: BrowserContext; page: Page }> => {
      // The probes are strings (this file has no DOM types), which the console's CSP refuses to
      // evaluate; the browser is told to skip the CSP for them. The page's own code is unchanged.
      const context = await browser!.newContext({ viewport: { width: 1280, height: 800 }, bypassCSP: true });
      await context.addInitScript(PAGE_PROBES);
      const page = await context.newPage();
      page.on('response', (res) => {
        const url = new URL(res.url());
        // The event stream never ends; every other API answer is one page.
        if (!url.pathname.startsWith('/api/') || url.pathname === '/api/v1/events') return;
        void res.body().then(
          (b) => {
            apiSizes.push({ url: url.pathname + url.search, bytes: b.length });
            const t = res.request().timing();
            if (url.pathname === '/api/v1/fleet' && t.responseEnd > 0)
              fleetMs.push(t.responseEnd - t.requestStart);
          },
          () => undefined,
        );
      });
      return { context, page };
    };

    // First page after navigation, each time in a fresh browser profile (nothing cached).
    const firstPage: number[] = [];
    const runs = ctx.quick ? 3 : 10;
    for (let i = 0; i < runs; i++) {
      const { context, page } = await newPage();
      await page.goto(`${stack.hubUrl}/`);
      await page.waitForFunction('window.__bench.firstRows !== null', undefined, { timeout: 30_000 });
      firstPage.push(await page.evaluate<number>('window.__bench.firstRows'));
      await context.close();
    }
    figures.push(
      figure({
        id: 'console.first-page',
        bench: BENCH,
        title: `Fleet matrix: first page of rows after navigation (${clusters} clusters × ${APPSETS} appsets, cold browser profile)`,
        unit: 'ms',
        fleetSize: clusters,
        samples: firstPage,
        target: FIRST_PAGE,
        notes: `from navigation start to the first matrix row in the DOM (performance.now()), ${runs} navigations; the hub's /api/v1/fleet answers in them: median ${median(fleetMs).toFixed(0)} ms`,
        command: COMMAND,
      }),
    );
    ctx.progress(`first page: ${firstPage.map((m) => m.toFixed(0)).join(', ')} ms`);

    // Label filters on one open matrix: each a different region (clusters / REGIONS clusters).
    const { context, page } = await newPage();
    await page.goto(`${stack.hubUrl}/`);
    await page.waitForFunction('window.__bench.firstRows !== null', undefined, { timeout: 30_000 });
    const filterMs: number[] = [];
    fleetMs.length = 0;
    const perRegion = clusters / REGIONS;
    for (let i = 0; i < (ctx.quick ? 5 : 20); i++) {
      await page.getByLabel('Cluster labels').fill(`region=r${i % REGIONS}`);
      filterMs.push(await page.evaluate<number>(TIMED_FILTER(perRegion)));
      // Back to the whole fleet, so that the next filter is a change again.
      await page.getByLabel('Cluster labels').fill('');
      await page.evaluate(TIMED_FILTER(clusters));
    }
    figures.push(
      figure({
        id: 'console.label-filter',
        bench: BENCH,
        title: `Fleet matrix: a label filter's answer (region=…, ${perRegion} of ${clusters} clusters)`,
        unit: 'ms',
        fleetSize: clusters,
        samples: filterMs,
        target: LABEL_FILTER,
        notes: `from the click on Apply filters until the counts show the filtered fleet, timed in the page; the hub's /api/v1/fleet answers meanwhile: median ${median(fleetMs).toFixed(0)} ms`,
        command: COMMAND,
      }),
    );
    ctx.progress(`label filter: ${filterMs.map((m) => m.toFixed(0)).join(', ')} ms`);

    // Streaming: 100 target changes a second while the matrix (the whole fleet again) is open.
    const streamStart = await page.evaluate<number>('performance.now()');
    const fleetAnswersBefore = apiSizes.filter((a) => a.url.startsWith('/api/v1/fleet')).length;
    const changed = await streamChanges(db, clusters, STREAM_SECONDS);
    await page.waitForTimeout(2500); // the last throttled refetch lands
    const longTasks = (await page.evaluate<{ at: number; ms: number }[]>('window.__bench.longTasks')).filter(
      (t) => t.at >= streamStart,
    );
    const refetches = apiSizes.filter((a) => a.url.startsWith('/api/v1/fleet')).length - fleetAnswersBefore;
    figures.push(
      figure({
        id: 'console.stream-long-task',
        bench: BENCH,
        title: `Fleet matrix open while ${CHANGES_PER_SECOND} target changes a second stream in for ${STREAM_SECONDS} s: longest main-thread task (0: none over 50 ms)`,
        unit: 'ms',
        fleetSize: clusters,
        samples: [longTasks.reduce((m, t) => Math.max(m, t.ms), 0)],
        target: LONG_TASK,
        notes: `${changed} target rows changed in PostgreSQL; ${longTasks.length} long tasks; ${refetches} matrix refetches (the hub's event stream, throttled to one refetch a second)`,
        command: COMMAND,
      }),
    );
    ctx.progress(`streaming: ${longTasks.length} long tasks, ${refetches} refetches`);

    // The other views' answers at this size: an appset (its targets paged) and a target.
    await page.goto(`${stack.hubUrl}/appsets/app-00`);
    await page.getByTestId('appset-counts').waitFor({ timeout: 30_000 });
    await page.goto(`${stack.hubUrl}/targets/${clusterName(0)}-app-00`);
    await page.getByRole('heading', { name: 'Live diff' }).waitFor({ timeout: 30_000 });
    await page.waitForTimeout(1000);
    await context.close();
    const largest = apiSizes.reduce((m, a) => (a.bytes > m.bytes ? a : m), { url: '', bytes: 0 });
    figures.push(
      figure({
        id: 'console.largest-api-page',
        bench: BENCH,
        title: 'Largest API answer the console fetched (matrix, filters, appset and target views)',
        unit: 'KB',
        fleetSize: clusters,
        samples: [largest.bytes / 1024],
        target: PAGE_SIZE,
        notes: `${apiSizes.length} answers; the largest: ${largest.url}`,
        command: COMMAND,
      }),
    );
    remarks.push(
      `The ${clusters * APPSETS} targets are written straight into the hub's database (its migrations applied by the hub itself), not expanded from Git: the bench measures the console and the API that serves it, not the expansion (see the desired-state section).`,
    );
    return { figures, series: [], remarks };
  } finally {
    await browser?.close().catch(() => undefined);
    await db.end().catch(() => undefined);
    await stack.stop();
  }
};

function median(ms: number[]): number {
  return ms.length === 0 ? Number.NaN : summarize(ms).median;
}

function clusterName(i: number): string {
  return `bench-${String(i).padStart(4, '0')}`;
}

/** Every file of the built console's JavaScript, gzipped at level 9 as a server would send it. */
function jsSize(): Figure {
  const assets = join(CONSOLE_DIST, 'assets');
  const files = readdirSync(assets).filter((f) => f.endsWith('.js'));
  const bytes = files.reduce((n, f) => n + gzipSync(readFileSync(join(assets, f)), { level: 9 }).length, 0);
  return figure({
    id: 'console.js-gzipped',
    bench: BENCH,
    title: 'JavaScript the console ships, gzipped',
    unit: 'KB',
    fleetSize: 0,
    samples: [bytes / 1024],
    target: JS_SIZE,
    notes: `${files.length} file(s) in apps/console/dist/assets`,
    command: COMMAND,
  });
}

/**
 * 1,000 clusters (labels env, region, tier) × 10 appsets in set-based SQL. Every target ran its
 * revision but a tenth of them, which Git moved on from; a few are degraded, so cells differ.
 */
async function seed(db: pg.Client, clusters: number): Promise<void> {
  await db.query('BEGIN');
  await db.query(
    `INSERT INTO "Cluster" (id, name, labels, "lastSeenAt", "registeredAt", "updatedAt")
     SELECT gen_random_uuid()::text, 'bench-' || lpad(i::text, 4, '0'),
            jsonb_build_object('env', CASE WHEN i % 10 = 0 THEN 'prod' ELSE 'staging' END,
                               'region', 'r' || (i % ${REGIONS}), 'tier', 't' || (i % 3)),
            now(), now(), now()
     FROM generate_series(0, $1 - 1) AS i`,
    [clusters],
  );
  await db.query(
    `INSERT INTO "ApplicationSet" (id, name, "apiVersion", spec, "repoUrls", status, "lastExpandedAt", "updatedAt")
     SELECT gen_random_uuid()::text, 'app-' || lpad(j::text, 2, '0'), 'flotilla.dev/v1alpha1',
            jsonb_build_object('metadata', jsonb_build_object('name', 'app-' || lpad(j::text, 2, '0'))),
            ARRAY['git://127.0.0.1/bench.git'], 'Ready', now(), now()
     FROM generate_series(0, ${APPSETS - 1}) AS j`,
  );
  await db.query(
    `INSERT INTO "Target" (id, name, "appSetId", "clusterId", namespace, "repoUrl", "sourcePath",
                           "targetRevision", "desiredRevision", "bundleDigest", "releasedRevision",
                           "releasedDigest", "syncPolicy", health, "lastSyncedRevision", "lastSyncedDigest",
                           "lastSyncedAt", "lastReportAt", "healthObservedAt", "updatedAt")
     SELECT gen_random_uuid()::text, c.name || '-' || a.name, a.id, c.id, a.name, 'git://127.0.0.1/bench.git',
            'apps/' || a.name, 'main', repeat('b', 40), 'sha256:' || repeat('d', 64), repeat('b', 40),
            'sha256:' || repeat('d', 64), '{"automated":{"prune":true,"selfHeal":true}}'::jsonb,
            CASE WHEN (hashtext(c.name || a.name) % 50) = 0 THEN 'Degraded' ELSE 'Healthy' END,
            CASE WHEN (hashtext(a.name || c.name) % 10) = 0 THEN repeat('a', 40) ELSE repeat('b', 40) END,
            'sha256:' || repeat('d', 64), now(), now(), now(), now()
     FROM "Cluster" c CROSS JOIN "ApplicationSet" a`,
  );
  await db.query('COMMIT');
  await db.query('ANALYZE');
}

/**
 * Changes `CHANGES_PER_SECOND` target rows a second (health flips, as agents' reports would move
 * it) for `seconds`, in batches every 100 ms; the hub's event stream notices them by updatedAt.
 */
async function streamChanges(db: pg.Client, clusters: number, seconds: number): Promise<number> {
  const perTick = CHANGES_PER_SECOND / 10;
  const total = clusters * APPSETS;
  let changed = 0;
  const start = performance.now();
  for (let tick = 0; tick < seconds * 10; tick++) {
    const offset = (tick * perTick * 7919) % Math.max(1, total - perTick);
    const r = await db.query(
      `UPDATE "Target" SET health = CASE WHEN health = 'Healthy' THEN 'Progressing' ELSE 'Healthy' END,
              "healthObservedAt" = now(), "updatedAt" = now()
       WHERE id IN (SELECT id FROM "Target" ORDER BY name OFFSET $1 LIMIT $2)`,
      [offset, perTick],
    );
    changed += r.rowCount ?? 0;
    const wait = start + (tick + 1) * 100 - performance.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
  }
  return changed;
}
