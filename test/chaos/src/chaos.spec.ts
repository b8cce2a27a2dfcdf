import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChaosSession, scenarioNames } from './chaos-run.js';

/**
 * CI's fault runs: the same scenarios as `npm run chaos`, at reduced size (3 clusters × 3 apps,
 * PostgreSQL down 10 s, an agent offline 10 s, 3 s per proxy fault), on one fleet with its own PostgreSQL cluster and
 * redis-server. Each scenario asserts its end state and that no report, history row or audit event
 * was lost or doubled; a failure names the check that failed.
 */
describe('chaos: fault runs at CI size', () => {
  let session: ChaosSession;
  const progress = process.env['CHAOS_VERBOSE'] ? (line: string) => console.log(line) : () => undefined;

  beforeAll(async () => {
    session = await ChaosSession.start(
      {
        clusters: 3,
        apps: 3,
        postgresOutageSeconds: 10,
        agentOfflineSeconds: 10,
        proxyFaultSeconds: 3,
        convergeTimeoutMs: 120_000,
      },
      progress,
    );
  }, 180_000);
  afterAll(async () => {
    await session?.stop();
  }, 60_000);

  /**
   * Known defects that `npm run chaos` reports as FAILED; CI shows them as skipped until they are fixed
   * (docs/chaos.md, Findings). None at present.
   */
  const knownDefects = new Set<string>([]);

  // In order: the fleet run deploys the apps every fault then breaks.
  for (const name of scenarioNames()) {
    it.skipIf(knownDefects.has(name))(
      `${name}: converges with nothing lost or doubled`,
      async () => {
        const result = await session.run(name);
        expect(result.ok, result.detail).toBe(true);
        // A hub that exits by itself is a defect even when the restarted one loses nothing.
        expect(result.hubCrashes).toEqual([]);
        expect(result.outcome?.ledger.sent).toBeGreaterThan(0);
      },
      240_000,
    );
  }
});
