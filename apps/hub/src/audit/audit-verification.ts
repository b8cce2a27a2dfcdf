import type { AuditChainBreakView, AuditFullPassView, AuditVerifyView } from '@flotilla/contract';
import type { Prisma } from '../generated/prisma/client.js';
import { auditHash, ChainVerifier, type StoredAuditEvent } from './audit-chain.js';
import { chainLanes, chainStart } from './audit-lanes.js';

type Client = Prisma.TransactionClient;
type LaneView = NonNullable<AuditVerifyView['lanes']>[number];

const PAGE = 1000;
/**
 * Events an incremental `GET /api/v1/audit/verify` recomputes at most, over all lanes: what any
 * viewer can make the hub read. The monitor keeps the stored positions near the tail, so a call
 * normally reads the last minute's events; after a long stop it takes several calls to catch up.
 */
export const VERIFY_BUDGET = 100_000;

/** A lane's last verified event and its hash then (AuditChainVerified). */
export interface VerifiedPosition {
  throughId: bigint;
  hash: string;
  verifiedAt?: Date;
}

/** The start a lane's walk begins after: an event (its id and hash), or genesis (no id). */
interface WalkStart {
  afterId: bigint | undefined;
  hash: string;
}

export async function verifiedPosition(client: Client, lane: number): Promise<VerifiedPosition | undefined> {
  const row = await client.auditChainVerified.findUnique({ where: { lane } });
  return row ?? undefined;
}

/**
 * Stores a lane's verified position, only ever forward: two replicas (or the monitor and a caller)
 * verifying at once each write what they reached and the furthest stays. At the same event only the
 * same hash refreshes `verifiedAt`: a stored hash is never replaced by another.
 */
export async function advanceVerified(
  client: Client,
  lane: number,
  position: VerifiedPosition,
): Promise<void> {
  await client.$executeRaw`
    INSERT INTO "AuditChainVerified" ("lane", "throughId", "hash", "verifiedAt")
    VALUES (${lane}::smallint, ${position.throughId}::bigint, ${position.hash}, ${new Date().toISOString()}::timestamp)
    ON CONFLICT ("lane") DO UPDATE
      SET "throughId" = EXCLUDED."throughId", "hash" = EXCLUDED."hash", "verifiedAt" = EXCLUDED."verifiedAt"
      WHERE "AuditChainVerified"."throughId" < EXCLUDED."throughId"
         OR ("AuditChainVerified"."throughId" = EXCLUDED."throughId" AND "AuditChainVerified"."hash" = EXCLUDED."hash")`;
}

/** Keeps the latest full pass (by when it finished) whichever replica ran it. */
export async function recordFullPass(client: Client, pass: AuditFullPassView): Promise<void> {
  const broken = pass.firstBrokenAt ? JSON.stringify(pass.firstBrokenAt) : null;
  await client.$executeRaw`
    INSERT INTO "AuditFullPass" ("id", "finishedAt", "valid", "checked", "firstBrokenAt")
    VALUES (1, ${pass.finishedAt}::timestamp, ${pass.valid}, ${pass.checked}::int, ${broken}::jsonb)
    ON CONFLICT ("id") DO UPDATE
      SET "finishedAt" = EXCLUDED."finishedAt", "valid" = EXCLUDED."valid", "checked" = EXCLUDED."checked",
          "firstBrokenAt" = EXCLUDED."firstBrokenAt"
      WHERE "AuditFullPass"."finishedAt" <= EXCLUDED."finishedAt"`;
}

export async function lastFullPass(client: Client): Promise<AuditFullPassView | null> {
  const row = await client.auditFullPass.findUnique({ where: { id: 1 } });
  if (!row) return null;
  return {
    finishedAt: row.finishedAt.toISOString(),
    valid: row.valid,
    checked: row.checked,
    ...(row.firstBrokenAt !== null && { firstBrokenAt: row.firstBrokenAt as AuditChainBreakView }),
  };
}

/** Whether a stored position lies after the lane's start (else it was pruned with its events). */
const beyond = (position: VerifiedPosition, start: WalkStart) =>
  start.afterId === undefined || position.throughId > start.afterId;

/**
 * One lane's chain walked forward a page at a time from where it starts (genesis, an archive
 * checkpoint or a verified position), resumable across calls (the monitor keeps one per lane).
 * `expected`: a stored verified position a full walk must meet with the same hash, so that a rewrite
 * of rows that still link up (the tail, hashes recomputed) or a deleted tail shows.
 */
export class LaneWalk {
  readonly verifier: ChainVerifier;
  /** The last event verified (or the start). */
  after: bigint | undefined;
  readonly fromId: bigint | undefined;
  /** The last step read to the lane's end. */
  caughtUp = false;
  private expected: VerifiedPosition | undefined;

  constructor(
    readonly lane: number,
    start: WalkStart,
    expected?: VerifiedPosition,
  ) {
    this.verifier = new ChainVerifier(start.hash);
    this.after = this.fromId = start.afterId;
    this.expected = expected && beyond(expected, start) ? expected : undefined;
  }

  /** Reads and verifies at most `budget` events (stops at a break); returns how many were read. */
  async step(client: Client, budget = Number.POSITIVE_INFINITY): Promise<number> {
    let read = 0;
    this.caughtUp = false;
    while (read < budget && !this.verifier.broken) {
      const take = Math.min(PAGE, budget - read);
      const rows = await client.auditEvent.findMany({
        where: { lane: this.lane, ...(this.after !== undefined && { id: { gt: this.after } }) },
        orderBy: { id: 'asc' },
        take,
      });
      read += rows.length;
      for (const row of rows) {
        if (!this.check(row)) break;
        this.after = row.id;
      }
      if (rows.length < take && !this.verifier.broken) {
        this.caughtUp = true;
        this.missedExpected();
        break;
      }
    }
    return read;
  }

  /** Where the lane is verified through, to store; undefined when nothing was verified. */
  get position(): VerifiedPosition | undefined {
    const hash = this.verifier.last;
    return this.after !== undefined && hash !== undefined ? { throughId: this.after, hash } : undefined;
  }

  view(): LaneView {
    const { verifier } = this;
    return {
      lane: this.lane,
      valid: verifier.broken === undefined,
      checked: verifier.checked,
      unchained: verifier.unchained,
      ...(verifier.broken && { firstBrokenAt: { ...verifier.broken, lane: this.lane } }),
      fromId: this.fromId?.toString() ?? null,
      throughId: this.after?.toString() ?? null,
      caughtUp: this.caughtUp,
    };
  }

  private check(row: StoredAuditEvent): boolean {
    const expected = this.expected;
    if (expected && row.id > expected.throughId) {
      return this.verifier.breakAt(
        row,
        'broken-link',
        `event ${expected.throughId}, verified before, is gone: it was deleted and the events after it rewritten`,
      );
    }
    if (!this.verifier.next(row)) return false;
    if (expected && row.id === expected.throughId) {
      this.expected = undefined;
      if (row.hash !== expected.hash) return rewritten(this.verifier, row);
    }
    return true;
  }

  private missedExpected(): void {
    const expected = this.expected;
    if (!expected) return;
    this.verifier.breakAt(
      { id: expected.throughId, at: expected.verifiedAt ?? new Date(0) },
      'broken-link',
      `event ${expected.throughId}, verified before, is gone: the lane's newest events were deleted`,
    );
  }
}

const rewritten = (verifier: ChainVerifier, row: StoredAuditEvent) =>
  verifier.breakAt(
    row,
    'hash-mismatch',
    `event ${row.id} no longer has the hash it had when verified: it was rewritten (its hash recomputed)`,
  );

/**
 * A lane's walk for a pass. Full: from the archive checkpoint (or genesis), expecting to meet the
 * stored position. Incremental: after the stored position, once that event is found still holding
 * the stored hash and matching it; with no position (or one pruned since), from the start.
 */
export async function startLane(client: Client, lane: number, full: boolean): Promise<LaneWalk> {
  const [start, stored] = await Promise.all([chainStart(client, lane), verifiedPosition(client, lane)]);
  if (full) return new LaneWalk(lane, start, stored);
  if (!stored || !beyond(stored, start)) return new LaneWalk(lane, start);
  const walk = new LaneWalk(lane, { afterId: stored.throughId, hash: stored.hash });
  const row = await client.auditEvent.findFirst({ where: { lane, id: stored.throughId } });
  if (!row) {
    // Pruned between the two reads? Then the lane starts at the new checkpoint.
    const now = await chainStart(client, lane);
    if (!beyond(stored, now)) return new LaneWalk(lane, now);
    walk.verifier.breakAt(
      { id: stored.throughId, at: stored.verifiedAt ?? new Date(0) },
      'broken-link',
      `event ${stored.throughId}, verified before, is gone: it was deleted`,
    );
  } else if (row.hash !== stored.hash) {
    rewritten(walk.verifier, row);
  } else if (row.prevHash === null || auditHash(row.prevHash, row) !== row.hash) {
    walk.verifier.breakAt(
      row,
      'hash-mismatch',
      `event ${row.id} does not match its hash: its content was edited`,
    );
  }
  return walk;
}

/** Stores how far a walk got, if it got anywhere since `before`. */
export async function saveProgress(
  client: Client,
  walk: LaneWalk,
  before: bigint | undefined,
): Promise<void> {
  const position = walk.position;
  if (position && walk.after !== before) await advanceVerified(client, walk.lane, position);
}

/** The earliest (lowest id) break among the lanes. */
function earliestBreak(lanes: LaneView[]): AuditChainBreakView | undefined {
  const breaks = lanes.flatMap((l) => (l.firstBrokenAt ? [l.firstBrokenAt] : []));
  return breaks.sort((a, b) => (BigInt(a.id) < BigInt(b.id) ? -1 : 1))[0];
}

/**
 * Verifies every lane, oldest first, each stopping at its first break; stores each lane's position
 * as it advances. Incremental (the default) reads at most `budget` events after the stored positions
 * and counts the last full pass's result in `valid`: a break it found in old rows stays a break.
 * Full reads everything from each lane's start and becomes the last full pass.
 */
export async function verifyChain(
  client: Client,
  options: { full: boolean; budget?: number },
): Promise<AuditVerifyView> {
  let budget = options.full ? Number.POSITIVE_INFINITY : (options.budget ?? VERIFY_BUDGET);
  const lanes: LaneView[] = [];
  for (const lane of await chainLanes(client)) {
    const walk = await startLane(client, lane, options.full);
    budget -= await walk.step(client, budget);
    await saveProgress(client, walk, walk.fromId);
    lanes.push(walk.view());
  }
  const firstBrokenAt = earliestBreak(lanes);
  const checked = lanes.reduce((n, l) => n + l.checked, 0);
  const found = {
    valid: firstBrokenAt === undefined,
    checked,
    unchained: lanes.reduce((n, l) => n + l.unchained, 0),
    ...(firstBrokenAt && { firstBrokenAt }),
    lanes,
    mode: options.full ? ('full' as const) : ('incremental' as const),
    complete: lanes.every((l) => l.caughtUp || !l.valid),
  };
  if (options.full) {
    const pass = {
      finishedAt: new Date().toISOString(),
      valid: found.valid,
      checked,
      ...(firstBrokenAt && { firstBrokenAt }),
    };
    await recordFullPass(client, pass);
    return { ...found, lastFullPass: pass };
  }
  const last = await lastFullPass(client);
  const oldBreak = last?.valid === false ? last.firstBrokenAt : undefined;
  return {
    ...found,
    valid: found.valid && last?.valid !== false,
    ...(!firstBrokenAt && oldBreak && { firstBrokenAt: oldBreak }),
    lastFullPass: last,
  };
}
