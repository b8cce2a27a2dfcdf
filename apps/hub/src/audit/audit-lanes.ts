import type { Prisma } from '../generated/prisma/client.js';
import { GENESIS_HASH } from './audit-chain.js';

type Tx = Prisma.TransactionClient;

/**
 * The first key of every lane's advisory lock ("audit" in ASCII); the lane is the second. The
 * two-key form lives apart from the one-key (bigint) locks the hub takes elsewhere.
 */
const AUDIT_CHAIN_LOCK = 0x61756469;

/**
 * The audit log is several hash chains ("lanes") written side by side, each behind its own
 * transaction-scoped advisory lock, so that up to `count` transactions record audit at once across
 * every connection and hub replica, where one chain let one at a time. Tamper evidence is per lane:
 * an edit, deletion or insertion breaks its lane's chain from that row on.
 *
 * A transaction holds at most one lane lock, so two appenders never wait on each other's second
 * lock (no deadlock among appenders): a transaction that records again reuses its lane.
 */
export class ChainLanes {
  /** The lane each open transaction holds; a transaction client is one object for its whole life. */
  private readonly held = new WeakMap<Tx, number>();

  constructor(readonly count: number) {}

  /**
   * A lane whose lock this transaction now holds (until commit or rollback): the one it already
   * holds, else the first free one from a random start, else it waits for the start lane. The
   * random start spreads writers; trying before waiting keeps one busy lane from queueing writers
   * while others are free.
   */
  async acquire(tx: Tx): Promise<number> {
    const mine = this.held.get(tx);
    if (mine !== undefined) return mine;
    const start = Math.floor(Math.random() * this.count);
    let lane: number | undefined;
    for (let i = 0; i < this.count && lane === undefined; i++) {
      const candidate = (start + i) % this.count;
      const [row] = await tx.$queryRaw<{ locked: boolean }[]>`
        SELECT pg_try_advisory_xact_lock(${AUDIT_CHAIN_LOCK}::int, ${candidate}::int) AS locked`;
      if (row?.locked) lane = candidate;
    }
    if (lane === undefined) {
      lane = start;
      await tx.$executeRaw`SELECT pg_advisory_xact_lock(${AUDIT_CHAIN_LOCK}::int, ${lane}::int)`;
    }
    this.held.set(tx, lane);
    return lane;
  }
}

/**
 * Every lane that holds events or was ever cut by an archive, ascending: what verification walks,
 * whatever the lane count is now (it may have been larger). The events' lanes come from a skip scan
 * of the (lane, id) index, one probe per lane, not a read of the table.
 */
export async function chainLanes(client: Pick<Tx, '$queryRaw'>): Promise<number[]> {
  const rows = await client.$queryRaw<{ lane: number }[]>`
    WITH RECURSIVE lanes AS (
      SELECT (SELECT min("lane") FROM "AuditEvent") AS lane
      UNION ALL
      SELECT (SELECT min("lane") FROM "AuditEvent" WHERE "lane" > lanes.lane) FROM lanes WHERE lanes.lane IS NOT NULL
    )
    SELECT lane::int AS lane FROM lanes WHERE lane IS NOT NULL
    UNION
    SELECT DISTINCT "lane"::int FROM "AuditCheckpoint"
    ORDER BY lane`;
  return rows.map((r) => r.lane);
}

/**
 * Where a lane's chain starts: after its latest archive checkpoint (its events up to `afterId` were
 * pruned, `hash` is the last one's), or at genesis.
 */
export async function chainStart(
  client: Pick<Tx, 'auditCheckpoint'>,
  lane: number,
): Promise<{ hash: string; afterId: bigint | undefined }> {
  const cp = await client.auditCheckpoint.findFirst({
    where: { lane },
    orderBy: { throughId: 'desc' },
    select: { throughId: true, hash: true },
  });
  return cp ? { hash: cp.hash, afterId: cp.throughId } : { hash: GENESIS_HASH, afterId: undefined };
}
