import { type Machine } from './machine.js';
import { targetValue } from './stats.js';
import { lineChart } from './svg-chart.js';
import { type Figure, type Series } from './types.js';

export interface BenchRun {
  date: string;
  quick: boolean;
  machine: Machine;
  figures: Figure[];
  series: Series[];
  remarks: string[];
}

/** docs/benchmarks.json: the last run of each benchmark. */
export interface BenchFile {
  generatedAt: string;
  runs: Record<string, BenchRun>;
}

const SECTIONS: Record<string, { title: string; what: string }> = {
  sim: {
    title: 'kube-sim: idle simulated clusters in one process',
    what: 'One Node process serves N simulated clusters (each its own HTTP server on 127.0.0.1 with a namespace, a ConfigMap and a one-replica Deployment), then sits idle. RSS and CPU of that process, sampled in 10 slices; per-cluster RSS is measured above the same process before any cluster started.',
  },
  'sim-apply': {
    title: 'kube-sim: CPU per apply and per controller pass',
    what: 'Ten simulated clusters in one Node process (as the fleet bench hosts them), each given 10 apps (a namespace, a Deployment, a Service, a ConfigMap) by server-side apply over HTTP with `fetch`, while the controllers run. A round applies every app of every cluster once; its CPU is the whole process’s (the HTTP client included) from the first request until the controllers have settled, divided by the apps. Rounds where only the ConfigMaps change (what a release of the fleet bench does), where nothing changes, and where a new image rolls out; then every controller of every cluster is run 20 times (`poke`) to time a full pass.',
  },
  agent: {
    title: 'Agent: memory, cold sync and drift-to-heal',
    what: 'The agent binary as shipped (`apps/agent/dist/bundle/flotilla-agent.mjs`, the rolldown bundle `flotilla-agent` runs) as its own process against the real hub (its own process, on PostgreSQL and Redis, with the apps served by `git daemon`) and one simulated cluster. 500 objects in 50 targets (each app: a namespace, 2 Deployments, 2 Services, 5 ConfigMaps). Drift: another client merge-patches one ConfigMap per target (field manager `kubectl-edit`); a separate watch times the write until the healed value comes back.',
  },
  diff: {
    title: 'Diff throughput',
    what: '`diffObjects` from `@flotilla/diff` over 10 Deployments as the simulator returns them after a server-side apply (defaults, status, managedFields), five of them drifted by another manager; runs of 500 diffs on one core.',
  },
  desired: {
    title: 'Desired state: expansion and rendering',
    what: '`generate` alone for 1,000 clusters × 20 app directories (a matrix of the clusters and git-directories generators). Then the same ApplicationSet posted to the real hub on a ladder of 10, 100 and 1,000 registered clusters: time until the appset reports `Ready` with every target stored; a size that does not finish within 90 s is recorded as 90 s (missed) and the larger sizes are not tried. The floor reads the stored rows back and inserts them into a copy of the table. The render count (`flotilla_expansion_renders_total` on the hub) and the bundle count show whether each app was rendered once for all its clusters. At the largest size a commit then changes every app and the repository is refreshed: the re-expansion time runs until every stored target points at the new commit. Then Helm, on the same registered clusters (the other appsets deleted first): a chart with values every cluster shares, counted in renders (one is the target), and a chart whose values differ by cluster name, timed from the POST to `Ready` against the same number of bare `helm template` runs of that chart, as many at once as the hub renders (one per CPU, `RENDER_CONCURRENCY`); the hub renders each new input twice (its determinism check), so twice the floor is its own floor.',
  },
  ingest: {
    title: 'Report ingest at fleet scale',
    what: 'The hub as its own process on PostgreSQL and Redis, 100 registered agents (real credentials, the real `POST /api/agent/v1/reports` route) and 10 targets per cluster. Each round every agent posts one batch at the same moment — a sync and a health report per target, as after a commit — so the hub ingests 2,000 reports at once; then the first round is sent again (all replays). The floor reads back every report, sync run and audit event the hub stored and inserts them into copies of their tables with multi-row INSERTs in one transaction.',
  },
  console: {
    title: 'Web console in Chromium: 1,000 clusters × 10 ApplicationSets',
    what: 'The hub as its own process on PostgreSQL and Redis, serving the built console, with 1,000 clusters (labels env, region, tier) × 10 ApplicationSets = 10,000 targets written straight into its database with set-based SQL (the hub applied its own migrations; nothing is expanded from Git). Debian’s Chromium (headless, through `playwright-core`) opens the fleet matrix ten times, each in a fresh browser profile; a script installed before the page’s own records when the first matrix row enters the DOM (`performance.now()`, ms since navigation began). On one open matrix, twenty label filters (`region=rN`, 50 clusters each) are timed in the page from the click on Apply filters until the counts show the filtered fleet. Then 100 target rows a second change in PostgreSQL for 10 s (health flips, as agents’ reports move it) while the matrix is open; the hub’s event stream announces them and the console refetches what is on screen, at most once a second; a `PerformanceObserver` on `longtask` records every main-thread task over 50 ms. Every API answer the pages fetched (matrix, filters, an appset’s view with its paged targets, a target’s view) is weighed; the largest is reported with its URL. The JavaScript size is every file of `apps/console/dist/assets`, gzipped at level 9.',
  },
  policy: {
    title: 'Admission policies: evaluation per target against its render',
    what: 'Ten ValidatingAdmissionPolicies of the kinds fleets write (an image registry, a replica limit from a params ConfigMap, a required label, no `:latest`, limits set, a memory cap with `quantity`, a name regex, no LoadBalancer Service, a ConfigMap size, Service ports), each with its binding (Deny, Warn or Audit), compiled once with `@flotilla/policy`. 1,000 targets, each its own plain-YAML app (a Deployment of two containers, a Service, a ConfigMap; every tenth from a forbidden registry, checked to be denied): each rendered as the hub renders a Git source (`renderApplication`: read, parse, sort, then the bundle digest), then judged with `gateBundle` as the release gate calls it. One process, one core; each sample is the mean over 50 targets. The floor of the evaluation is the render of the same targets: the ratio is what the gate adds to the cheapest render the hub does (a Helm render costs far more). The hub evaluates a bundle once however many clusters share it (`flotilla_policy_evaluations_total`); here no two are alike.',
  },
  fleet: {
    title: 'Fleet runs: real hub, real agents, simulated clusters',
    what: 'The hub as its own process on PostgreSQL and Redis; N simulated clusters and N agents (N = 10, 100, 1,000; 10 apps each) in the bench process. **How a large run shares processes**: a 2-core machine cannot run 1,000 agent processes and 1,000 API servers, so the agents and simulated clusters share shard processes started by the bench — 25 clusters a shard up to 4 shards (250 clusters a shard at 1,000), each its own event loop, heap and file descriptors (both ends of every agent ↔ API-server connection live in the shard: 1,000 clusters in one process ran out of its 20,000). Sharing a process does not merge agents: each one is started with `startAgent` exactly as the `flotilla-agent` binary starts it, is registered separately through `POST /api/v1/clusters` (16 registrations at a time) and trades its own single-use bootstrap token for its own credential, keeps its own state dir and bundle cache, talks to its own simulated API server (its own HTTP port), and holds its own long-poll on the hub — the hub’s `flotilla_agent_long_polls` gauge, read after the idle window, counts them (`fleet.long-polls`). Startup (registration, every agent long-polling) and the bench process’s RSS are measured too. Each commit’s path is also traced step by step (`fleet.path-NN`): the hub’s fetch, expansion and release from its own rows and audit events, each agent’s long-poll answer, bundle fetches and report POSTs from its requests, its apply from the sync runs it reported, and when the hub stored them. 10 apps per cluster (a namespace, a Deployment, a Service, a ConfigMap). A commit changes every app; the bench sends the hub a signed GitHub push webhook and watches every cluster until all its apps carry the commit. From the webhook until the hub reports every target Synced it also samples the hub process (CPU, RSS), counts the agent reports stored, the commands of the bench’s private redis-server (`INFO commandstats`) and the transactions of its database (`pg_stat_database`, less the bench’s own queries); the hub’s Synced state is read from its Target rows, as `GET /api/v1/targets` derives it, so that polling it costs the hub nothing. Idle cost per cluster: over one 30 s window (one long-poll cycle of every agent) the hub’s CPU, Redis commands and PostgreSQL transactions, each divided by the clusters, and its RSS above the hub before any cluster; each is judged flat when its value at the largest size is under 1.5× its value at the next (10× fewer clusters). “One hub on 2 cores holds 1,000 clusters” is judged as: idle hub CPU under 25 % of one core while at least 99 % of the agents hold a long-poll, and the cold fleet and every commit reached every cluster within the wait. Horizontal hubs and faults: `npm run chaos` ([chaos.md](chaos.md)).',
  },
  swarm: {
    title: 'Swarm: the hub alone under 1,000 and 10,000 protocol-level clients',
    what: 'The hub as its own process on PostgreSQL and a private redis-server, pinned to core 0 (`taskset`), and N light clients (1,000, and 10,000 when its 14 minutes fit the budget) in up to 4 shard processes pinned to core 1, so each side’s CPU is its own (PostgreSQL and Redis are not pinned). Each client speaks the agent protocol exactly as the agent does — registration through `POST /api/v1/clusters` and the bootstrap-token exchange, a capabilities report, the assignments long-poll with its ETag, bundles by digest (`POST bundles/batch`, verified), a sync and a health report per changed target with ids of its own, resent unchanged until acknowledged, every answer parsed with the contract’s schemas — and applies nothing. A commit is a signed push webhook; each client records when its long-poll was answered with it, when it held its bundles and when the hub acknowledged its reports, and the hub’s Target rows say when every target is Synced. Report-ingest capacity: every client posts a sync and a health report per target at once, three rounds, then the first round again (all duplicates, or the job fails). Floors in the same run: a bare Node server on the hub’s core answering the same N held GETs at once; that plus a bare `SELECT` of each new bundle; a bare batched `INSERT` of the same report, sync-run and audit rows. **Where the time goes** (a V8 profile of the hub under the swarm, `FLOTILLA_BENCH_CPU_PROFILE`; see test/perf/README.md): the hub mostly waits for PostgreSQL — it ran at 17-26 % of its core during rollouts that took tens of seconds, against a bare fan-out of well under a second on the same core. Each woken long-poll computed its cluster’s assignments with five statements after the agent guard’s credential read, and they queued on two pools of 10 connections; writing statements to PostgreSQL’s sockets was 12 % of the hub’s samples, the Prisma client runtime about 9 %, the gateway’s own code under 2 % per endpoint. Now the long-polls woken within 5 ms (up to 250 clusters) share two rounds of set-based statements (cluster rows, served targets and pending operations by `"clusterId" = ANY($1)`, then break-glass and rollout strategies) and each answer is built in memory, identical to computing it alone; the guard’s credential look-ups arriving within 2 ms share one statement (nothing cached). Bundles are served from memory by digest and authorised from the answer just given.',
  },
  plan: {
    title: '`flotilla plan` before a merge',
    what: 'A Git repository holding a fleet (one appset putting 10 apps on every cluster of the inventory) and the apps, two commits apart, every app changed: `flotilla plan --base --head -o json` run as a process, as CI runs it — both revisions read from Git, every target generated and rendered at each, every object diffed. No hub and no cluster. Target (issue #26): under 10 s for 100 clusters × 10 apps, under 60 s for 1,000 clusters.',
  },
  'audit-writes': {
    title: 'Audit and history writes: one chain against chain lanes, 1 and 2 hub replicas',
    what: 'A fresh database per configuration, after the hub’s migrations. 32 writers at once, each in a loop of transactions that store one sync run and record its audit event through the hub’s own `AuditLog` (loaded from `apps/hub/dist`), as the report ingest does; for 10 s (3 s in quick mode; at most 50,000 transactions), after a short warm-up. One replica is one Node process with the hub’s `Database` (its pool of 10 connections) and `AuditLog` (test/perf/src/audit-writer.ts); two replicas are two such processes on the same database, the 32 writers split between them and started at one instant, each process with its own pool and event loop (HTTP and Nest are not in the path). `lanes=1` is one hash chain behind one advisory lock, the hub before chain lanes (`FLOTILLA_AUDIT_CHAIN_LANES=1`); `lanes=8` is the default. Throughput is counted per 500 ms window; latency is one transaction from BEGIN to COMMIT, waiting for a connection and the chain lock included. Each configuration ends, once the writers have stopped, with a full verification (`AuditLog.verify({ full: true })`) over every lane, which must pass and cover every event written.',
  },
  history: {
    title: 'History and audit queries over millions of sync runs in monthly partitions',
    what: 'Ten million sync runs and two million audit events by default (`--history-runs N`: N runs and N/5 events; the load figure and the first note say how many this run loaded) loaded with `INSERT … SELECT FROM generate_series` into a database of the bench’s own, after the hub’s migrations (so the schema and indexes are the hub’s); the indexes are dropped for the load and rebuilt from their own definitions, then `VACUUM ANALYZE`. Then the hub’s own query code — `SyncHistory.list` with the controller’s query schema and `AuditLog.list`, loaded from `apps/hub/dist` — is timed for each filter with fresh random parameters per call, and the SQL it sent (recorded at the `pg` driver) is run again under `EXPLAIN (ANALYZE, BUFFERS)`; the plans are below. The year is stored in the hub’s monthly partitions; then the hub’s `RetentionService` drops the months older than half a year (and the audit months before the same cutoff go as an archive prune drops them), and every query is timed again (`.after-retention` figures). Target: p95 < 50 ms per query.',
  },
};

const PEERS = `| system | published figure | how measured |
| --- | --- | --- |
| Argo CD | Git change noticed by polling within 120 s + up to 60 s jitter; seconds with a webhook; self-heal back-off 2 s → 300 s; 2 s between sync waves | defaults in the docs (\`argocd.md\` §2.3) |
| Argo CD | 500 clusters / 50,000 Applications; ~1 GiB per controller replica at 5k apps | CNOE benchmark; PR #24517 (\`argocd.md\` §2.2) |
| Argo CD | 1,296 appsets / 5,155 apps: ~30 min from an appset change to a generated app | issue #9002 |
| Rancher Fleet | 50 clusters × 50 bundles (2,550 deployments): GitRepo → all ready in ~50–90 s | maintainer QA script, real agents (\`hubspoke.md\` §2) |
| Rancher Fleet | 50 apps to 500 clusters → 16 vCPU / 64 GB | SUSE 2025 experiment |
| Plural (pull agent) | 1,100 clusters on just over 3 CPUs | vendor blog |
| KubeFleet | 1,000 member clusters: hub agent 8–12 cores, member agent ~1 core / 2 GB | vendor report, Q1 2026 |
| Karmada | distribution latency P99 ≤ 2 s (SLO), 100 clusters | v1.3 test report |`;

function num(v: number): string {
  if (!Number.isFinite(v)) return '∞';
  const a = Math.abs(v);
  return a >= 1000
    ? Math.round(v).toLocaleString('en-US')
    : a >= 100
      ? v.toFixed(0)
      : a >= 10
        ? v.toFixed(1)
        : v.toFixed(2);
}

function verdict(f: Figure): string {
  return f.verdict === 'met' ? '**met**' : f.verdict === 'missed' ? '**missed**' : '—';
}

function table(figures: Figure[]): string {
  const rows = figures.map((f) => {
    const floor = f.floor ? `${num(f.floor.ratio)}× (floor ${num(f.floor.median)} ${f.unit})` : '—';
    return `| ${f.title} | ${f.fleetSize} | ${f.runs} | ${num(f.median)} | ${num(f.p99)} | ${f.unit} | ${f.target?.text ?? '—'} | ${verdict(f)} | ${floor} |`;
  });
  return [
    '| figure | clusters | runs | median | p99 | unit | target | verdict | ratio to floor |',
    '| --- | ---: | ---: | ---: | ---: | --- | --- | --- | --- |',
    ...rows,
  ].join('\n');
}

function charts(series: Series[]): string[] {
  const byChart = new Map<string, Map<string, Series>>();
  for (const s of series) {
    const chart = byChart.get(s.chart) ?? new Map<string, Series>();
    const existing = chart.get(s.name);
    if (existing) existing.points.push(...s.points);
    else chart.set(s.name, { ...s, points: [...s.points] });
    byChart.set(s.chart, chart);
  }
  const out: string[] = [];
  for (const [name, chart] of byChart) {
    const list = [...chart.values()];
    if (list.every((s) => s.points.length < 2)) continue;
    const title = list.map((s) => s.name).join(' · ');
    out.push(`<!-- chart ${name} -->`, lineChart(title, 'simulated clusters (log scale)', list), '');
  }
  return out;
}

function loadRange(loads: number[]): string {
  const [low, high] = [Math.min(...loads), Math.max(...loads)];
  return low === high ? `here ${low}` : `here ${low} to ${high}`;
}

function machineLine(r: BenchRun): string {
  const m = r.machine;
  return `${m.cores} cores (${m.cpuModel}), ${m.memoryGiB} GiB RAM, Node ${m.node}; 1-min load average ${m.loadAverage} at the start; ${r.date}${r.quick ? '; **quick mode** (reduced sizes)' : ''}`;
}

/** The whole of docs/benchmarks.md, from the JSON. */
export function renderMarkdown(file: BenchFile, order: readonly string[]): string {
  const runs = order.flatMap((name) => (file.runs[name] ? [[name, file.runs[name]] as const] : []));
  const all = runs.flatMap(([, r]) => r.figures);
  const judged = all.filter((f) => f.verdict !== 'no target');
  const out: string[] = [
    '# Benchmarks',
    '',
    '<!-- Generated by `npm run bench` (test/perf). Do not edit by hand: re-run it. -->',
    '',
    `Flotilla's non-functional targets (\`DESIGN.md\`), measured. Generated ${file.generatedAt}; raw figures in [benchmarks.json](benchmarks.json).`,
    '',
    `> Benchmarks run one at a time, each in its own process, on the machine each section names, which records the`,
    `> 1-minute load average when its run started (${loadRange(runs.map(([, r]) => r.machine.loadAverage))}). Figures taken while other work`,
    '> shares the cores are pessimistic and noisy: compare figures taken at similar load.',
    '',
    'Every figure states its fleet size, its number of runs, the median and the 99th percentile (nearest rank; with',
    'fewer than 100 runs the p99 is the worst run), the target it is judged against, and where a physical floor exists,',
    'the ratio of its median to that floor measured in the same run.',
    '',
    '## Targets',
    '',
    '| target | figure | value | verdict |',
    '| --- | --- | ---: | --- |',
    ...judged.map((f) => {
      const v = targetValue(f);
      return `| ${f.target?.text} | ${f.title} | ${f.target?.on} ${num(v)} ${f.unit} | ${verdict(f)} |`;
    }),
    '',
    `${judged.filter((f) => f.verdict === 'met').length} met, ${judged.filter((f) => f.verdict === 'missed').length} missed.`,
    '',
  ];
  for (const [name, r] of runs) {
    const section = SECTIONS[name];
    out.push(`## ${section?.title ?? name}`, '', section?.what ?? '', '');
    out.push(`Machine: ${machineLine(r)}.`, '');
    out.push(`Reproduce: \`npm run bench -- --only ${name}\`${r.quick ? ' (this run: `--quick`)' : ''}.`, '');
    if (r.figures.length) out.push(table(r.figures), '');
    const notes = r.figures.filter((f) => f.notes);
    if (notes.length) {
      out.push('Notes:', '');
      for (const f of notes) out.push(`- ${f.title}: ${f.notes}.`);
      out.push('');
    }
    if (r.remarks.length) {
      for (const rem of r.remarks) out.push(`- ${rem}`);
      out.push('');
    }
    out.push(...charts(r.series));
  }
  out.push(
    '## Peer figures',
    '',
    'From `../shared/reference/hubspoke.md` §2 and `argocd.md` §2; none was measured on this machine, and few',
    'publish their method, so compare orders of magnitude, not digits.',
    '',
    PEERS,
    '',
    '## Reproducing',
    '',
    'Prerequisites as in the README: PostgreSQL answering at `TEST_DATABASE_URL` (default',
    '`postgresql://postgres@127.0.0.1:5432/postgres`; the bench makes and drops its own databases; `BENCH_DATABASE_URL`',
    'overrides), Redis at `redis://127.0.0.1:6379` (or `BENCH_REDIS_URL`; a private `redis-server` is started when none',
    'answers), git.',
    '',
    '```sh',
    'npm run bench                                   # everything, rewrites docs/benchmarks.{md,json} (≤ 30 min)',
    'npm run bench -- --only agent,sim               # a subset; other sections keep their last figures',
    'npm run bench -- --only fleet --fleet-sizes 10,100,1000',
    'npm run bench -- --only swarm --swarm-sizes 1000,10000   # the hub alone, pinned to one core',
    'FLOTILLA_BENCH_CPU_PROFILE=/tmp/prof npm run bench -- --only swarm --swarm-sizes 1000   # + V8 profiles',
    'npm run bench -- --quick                        # reduced sizes, written to test/perf/dist/quick/',
    '```',
    '',
    'Each benchmark runs in its own Node process (started with `--expose-gc`), one after another; every server binds',
    '127.0.0.1 on a free port and every process is stopped by PID at the end.',
    '',
  );
  return out.join('\n');
}
