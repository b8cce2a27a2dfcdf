import { ChaosFleet } from './chaos-fleet.js';
import {
  ChaosCheckError,
  SCENARIOS,
  type ChaosParams,
  type ChaosTarget,
  type Scenario,
  type ScenarioOutcome,
} from './scenarios.js';

export interface ScenarioResult {
  name: string;
  fault: string;
  ok: boolean;
  seconds: number;
  /** The failed check, or the scenario's figures. */
  detail: string;
  /** Hub processes that died on their own during the scenario (restarted by the harness). */
  hubCrashes: string[];
  outcome?: ScenarioOutcome;
  /** Which promise a failed scenario broke (anything but a failed check counts as `scenario`). */
  missed?: ChaosTarget;
}

export function scenarioNames(): string[] {
  return SCENARIOS.map((s) => s.name);
}

/**
 * One chaos session: starts a {@link ChaosFleet}, runs the chosen scenarios one after another on it
 * (the fleet run always first: it deploys the apps the others break), and stops everything. A failed
 * scenario is recorded and the next one still runs, unless the fleet itself cannot go on.
 */
export class ChaosSession {
  readonly results: ScenarioResult[] = [];
  private releaseNo = 0;

  private constructor(
    readonly fleet: ChaosFleet,
    readonly params: ChaosParams,
    private readonly progress: (line: string) => void,
  ) {}

  static async start(params: ChaosParams, progress: (line: string) => void): Promise<ChaosSession> {
    const fleet = await ChaosFleet.start({ clusters: params.clusters, apps: params.apps, progress });
    return new ChaosSession(fleet, params, progress);
  }

  scenario(name: string): Scenario {
    const s = SCENARIOS.find((x) => x.name === name);
    if (!s) throw new Error(`unknown scenario ${name}: choose from ${scenarioNames().join(', ')}`);
    return s;
  }

  async run(name: string): Promise<ScenarioResult> {
    const s = this.scenario(name);
    this.progress(`▶ ${s.name}: ${s.fault}`);
    const t0 = performance.now();
    const crashesBefore = this.fleet.hubCrashes.length;
    const crashes = (): string[] =>
      this.fleet.hubCrashes.slice(crashesBefore).map((c) => `hub ${c.hub} exited ${c.exit}: ${c.cause}`);
    let result: ScenarioResult;
    try {
      const outcome = await s.run({
        fleet: this.fleet,
        params: this.params,
        progress: this.progress,
        nextRelease: () => `r${++this.releaseNo}`,
      });
      const l = outcome.ledger;
      const figures = Object.entries(outcome.figures).map(([k, v]) => `${k} ${v}`);
      result = {
        name: s.name,
        fault: s.fault,
        ok: true,
        seconds: (performance.now() - t0) / 1000,
        detail: [...figures, `reports ${l.sent} sent / ${l.stored} stored / ${l.replayed} replayed`].join(
          '; ',
        ),
        hubCrashes: crashes(),
        outcome,
      };
    } catch (err) {
      result = {
        name: s.name,
        fault: s.fault,
        ok: false,
        seconds: (performance.now() - t0) / 1000,
        detail: err instanceof Error ? err.message : String(err),
        hubCrashes: crashes(),
        missed: err instanceof ChaosCheckError ? err.target : 'scenario',
      };
    }
    this.results.push(result);
    this.progress(`${result.ok ? '✔' : '✘'} ${s.name} (${result.seconds.toFixed(0)} s): ${result.detail}`);
    for (const c of result.hubCrashes) this.progress(`  ⚠ ${c}`);
    return result;
  }

  stop(): Promise<void> {
    return this.fleet.stop();
  }
}

/** The summary table printed at the end of `npm run chaos` (Markdown, so it pastes into docs). */
export function summaryTable(results: ScenarioResult[]): string {
  const rows = results.map((r) => {
    const crashes = r.hubCrashes.length ? `**hub crashed ${r.hubCrashes.length}×** (restarted)` : 'none';
    return `| ${r.name} | ${r.fault} | ${r.ok ? 'passed' : '**FAILED**'} | ${r.seconds.toFixed(0)} | ${crashes} | ${r.detail.replace(/\|/g, '\\|')} |`;
  });
  return [
    '| scenario | fault | end state and ledger | s | hub crashes | what was seen |',
    '| --- | --- | --- | ---: | --- | --- |',
    ...rows,
  ].join('\n');
}

/**
 * The targets a fault run is judged by (DESIGN.md: "kill any process mid-rollout: nothing is lost,
 * work resumes", and a hub must ride out its dependencies' faults), each met only when every
 * scenario that ran met it.
 */
export function targetsTable(results: ScenarioResult[]): { table: string; met: number; missed: number } {
  const targets: { text: string; missedBy: (r: ScenarioResult) => boolean }[] = [
    {
      text: 'nothing lost or doubled: every report an agent sent stored exactly once, with its history row and audit event; each commit expanded once',
      missedBy: (r) => r.missed === 'nothing-lost',
    },
    {
      text: 'work resumes: every cluster converges on the commit, the hub reports it Synced, no report left queued',
      missedBy: (r) => r.missed === 'work-resumes',
    },
    {
      text: "each scenario's own checks hold (held deletion, refetched bundle, work split, readiness, …)",
      missedBy: (r) => r.missed === 'scenario',
    },
    { text: 'no hub process crashes', missedBy: (r) => r.hubCrashes.length > 0 },
  ];
  let missed = 0;
  const rows = targets.map((t) => {
    const by = results.filter(t.missedBy).map((r) => r.name);
    if (by.length) missed++;
    return `| ${t.text} | ${by.length ? `**missed** (${by.join(', ')})` : 'met'} |`;
  });
  return {
    table: ['| target | verdict |', '| --- | --- |', ...rows].join('\n'),
    met: targets.length - missed,
    missed,
  };
}
