import { type CommandDescription } from '../command.js';
import { readFileSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseOptions } from '../options/parse-options.js';
import { parse } from 'yaml';
import { EXAMPLE_FLEET_DIR, createExampleRepo } from '../demo/example-repo.js';
import { LocalFleet } from '../fleet/local-fleet.js';
import type { TargetView } from '../fleet/hub-client.js';
import { cliConfigPath, loadCliConfig, saveCliConfig, withContext } from '../fleet/cli-config.js';

/** The CLI context the demo writes, so hub-backed commands find its hub on a random port. */
const DEMO_CONTEXT = 'flotilla-demo';

const HELP = `usage: flotilla demo [--clusters N] [--dir DIR] [--timeout SECONDS] [--once]

Starts a hub, N simulated clusters (default 3) with one agent each, and a local Git repository
holding two example applications (plain YAML, and a Helm chart) with an ApplicationSet each, then
shows them converge on their own.
Ctrl-C stops everything. --once exits after convergence (exit 1 if it did not converge in time).`;

const OPTIONS = {
  clusters: { type: 'string', default: '3' },
  dir: { type: 'string', default: '.flotilla/demo' },
  timeout: { type: 'string', default: '120' },
  once: { type: 'boolean', default: false },
  help: { type: 'boolean', short: 'h' },
} as const;

export const describe: CommandDescription = { options: OPTIONS };

export async function run(argv: string[]): Promise<number> {
  let values;
  try {
    ({ values } = parseOptions(argv, OPTIONS, { command: 'demo', allowPositionals: false }));
  } catch (err) {
    console.error(`flotilla demo: ${(err as Error).message}`);
    return 2;
  }
  if (values.help) {
    process.stdout.write(`${HELP}\n`);
    return 0;
  }
  const count = Number(values.clusters);
  const timeoutSeconds = Number(values.timeout);
  if (!Number.isInteger(count) || count < 1 || count > 50) {
    console.error('flotilla demo: --clusters must be a whole number from 1 to 50');
    return 2;
  }
  if (!Number.isFinite(timeoutSeconds) || timeoutSeconds <= 0) {
    console.error('flotilla demo: --timeout must be a positive number of seconds');
    return 2;
  }

  const workDir = resolve(values.dir);
  rmSync(workDir, { recursive: true, force: true });
  const say = (line: string) => console.log(`[demo] ${line}`);

  const repoDir = join(workDir, 'repo');
  const head = await createExampleRepo(repoDir);
  say(`example Git repository at ${repoDir} (main = ${head.slice(0, 12)})`);

  const running: { fleet?: LocalFleet } = {};
  let stopping = false;
  const stop = async (code: number) => {
    if (stopping) return;
    stopping = true;
    say('stopping the hub, agents and simulated clusters…');
    if (running.fleet?.hubUrl) forgetDemoContext(running.fleet.hubUrl);
    await running.fleet?.stop();
    say('stopped; nothing left running');
    process.exit(code);
  };
  process.on('SIGINT', () => void stop(0));
  process.on('SIGTERM', () => void stop(0));

  const envs = ['dev', 'staging', 'prod'];
  const fleet = new LocalFleet({
    workDir,
    clusters: count,
    labels: (i) => ({ env: envs[i % envs.length] ?? 'dev', region: i % 2 === 0 ? 'eu-west' : 'us-east' }),
    databaseUrl: process.env['DATABASE_URL'],
    redisUrl: process.env['REDIS_URL'],
    redisPrefix: `flotilla-demo-${process.pid}`,
    dropRedisKeysOnStop: true,
    pollSeconds: 2,
    onProgress: say,
  });

  running.fleet = fleet;
  try {
    return await converge(fleet, repoDir, workDir, envs, timeoutSeconds, values.once, say, stop);
  } catch (err) {
    say(`failed: ${(err as Error).message}`);
    await stop(1);
    return 1;
  }
}

/** The appsets of examples/demo-fleet/appsets the demo creates: plain YAML, and a Helm chart. */
const DEMO_APPSETS = ['guestbook', 'hello-chart'];

async function converge(
  fleet: LocalFleet,
  repoDir: string,
  workDir: string,
  envs: string[],
  timeoutSeconds: number,
  once: boolean,
  say: (line: string) => void,
  stop: (code: number) => Promise<void>,
): Promise<number> {
  await fleet.start();
  const count = fleet.clusters.length;
  const contextSaved = saveDemoContext(fleet.hubUrl, say);

  // The plain-YAML app and the Helm chart, each on every cluster.
  for (const name of DEMO_APPSETS) {
    const appSet = parse(readFileSync(join(EXAMPLE_FLEET_DIR, `appsets/${name}.yaml`), 'utf8')) as {
      spec: {
        generators: { list: { elements: unknown[] } }[];
        template: { spec: { source: { repoURL: string } } };
      };
    };
    appSet.spec.generators[0]!.list.elements = fleet.clusters.map((c, i) => ({
      cluster: c.name,
      env: envs[i % envs.length],
    }));
    appSet.spec.template.spec.source.repoURL = `file://${repoDir}`;
    await fleet.api.createAppSet(appSet);
  }
  say(`created ApplicationSets ${DEMO_APPSETS.join(' and ')}; waiting for every cluster to converge…`);

  const converged = await watchConvergence(fleet, count * DEMO_APPSETS.length, timeoutSeconds * 1000, say);
  printTable(await fleet.api.targets());
  console.log(`
${
  contextSaved
    ? `CLI            npx flotilla context use ${DEMO_CONTEXT}   (then: npx flotilla targets, history, audit …)
`
    : ''
}Web console    ${fleet.hubUrl}/
Hub API        ${fleet.hubUrl}/api/v1/targets
OpenAPI        ${fleet.hubUrl}/api/docs
Metrics        ${fleet.hubUrl}/metrics
Git repository ${repoDir}   (commit a change under apps/guestbook or apps/hello-chart and watch it roll out)
Logs           ${join(workDir, 'logs')}
Kubeconfigs    ${fleet.clusters.map((c) => c.kubeconfigPath).join('\n               ')}

Try: kubectl --kubeconfig ${fleet.clusters[0]?.kubeconfigPath} get deploy -A
     kubectl --kubeconfig ${fleet.clusters[0]?.kubeconfigPath} -n guestbook scale deploy guestbook-ui --replicas=5   (the agent heals it)
`);
  if (!converged) say(`not every target converged within ${timeoutSeconds} s; see the logs above`);
  if (once) {
    await stop(converged ? 0 : 1);
    return converged ? 0 : 1;
  }
  say('running; press Ctrl-C to stop everything');
  await new Promise(() => undefined);
  return 0;
}

async function watchConvergence(
  fleet: LocalFleet,
  expected: number,
  timeoutMs: number,
  say: (l: string) => void,
): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  const last = new Map<string, string>();
  while (Date.now() < deadline) {
    let targets: TargetView[] = [];
    try {
      targets = await fleet.api.targets();
    } catch (err) {
      say(`hub not answering: ${(err as Error).message}`);
    }
    for (const t of targets) {
      const state = `${t.syncStatus}/${t.health ?? 'Unknown'}${t.desiredRevision ? ` @ ${t.desiredRevision.slice(0, 7)}` : ''}`;
      if (last.get(t.name) !== state) {
        say(`${t.name.padEnd(24)} ${state}`);
        last.set(t.name, state);
      }
    }
    if (
      targets.length >= expected &&
      targets.every((t) => t.syncStatus === 'Synced' && t.health === 'Healthy')
    ) {
      say(`all ${targets.length} targets Synced and Healthy`);
      return true;
    }
    await new Promise((r) => setTimeout(r, 1000));
  }
  return false;
}

function printTable(targets: TargetView[]): void {
  const rows = targets
    .map((t) => [
      t.cluster,
      t.name,
      (t.desiredRevision ?? '-').slice(0, 12),
      t.syncStatus,
      t.health ?? 'Unknown',
    ])
    .sort((a, b) => a.join().localeCompare(b.join()));
  const header = ['CLUSTER', 'TARGET', 'REVISION', 'SYNC', 'HEALTH'];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  console.log('');
  for (const row of [header, ...rows]) console.log(row.map((c, i) => c.padEnd(widths[i]!)).join('  '));
}

/** Adds (or refreshes) the flotilla-demo context; a config file the CLI cannot read is left alone. */
function saveDemoContext(hubUrl: string, say: (line: string) => void): boolean {
  const path = cliConfigPath();
  try {
    saveCliConfig(withContext(loadCliConfig(path), { name: DEMO_CONTEXT, hub: hubUrl }), path);
    say(`wrote the CLI context ${DEMO_CONTEXT} (${hubUrl}) to ${path}`);
    return true;
  } catch (err) {
    say(`could not write the CLI context ${DEMO_CONTEXT} to ${path}: ${(err as Error).message}`);
    return false;
  }
}

/** Removes the demo's context when it still points at this demo's hub (another demo may own it). */
function forgetDemoContext(hubUrl: string): void {
  const path = cliConfigPath();
  try {
    const config = loadCliConfig(path);
    if (config.contexts.find((c) => c.name === DEMO_CONTEXT)?.hub !== hubUrl) return;
    const { currentContext, ...rest } = config;
    saveCliConfig(
      {
        ...rest,
        contexts: config.contexts.filter((c) => c.name !== DEMO_CONTEXT),
        ...(currentContext && currentContext !== DEMO_CONTEXT && { currentContext }),
      },
      path,
    );
  } catch {
    // Leaving a stale context behind is harmless: commands then say the hub cannot be reached.
  }
}
