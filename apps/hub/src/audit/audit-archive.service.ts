import type { AuditActor, AuditArchiveLane } from '@flotilla/contract';
import { createHash, type Hash } from 'node:crypto';
import type { AuditArchiveCheckpoint } from '@flotilla/contract';
import { Injectable } from '@nestjs/common';
import { Database } from '../db/database.js';
import { dropMonthPartitionsBefore } from '../db/partitions.js';
import { HubError } from '../common/hub-error.js';
import type { Prisma } from '../generated/prisma/client.js';
import { ChainVerifier } from './audit-chain.js';
import { chainLanes, chainStart } from './audit-lanes.js';
import { AuditLog } from './audit.service.js';

type Tx = Prisma.TransactionClient;

/** Events read per page while exporting or checking an archive. */
const PAGE = 1000;
/** Events deleted per statement once an archive is accepted. */
const DELETE_BATCH = 5000;
/** Only one prune at a time: "prune" in ASCII. */
const PRUNE_LOCK = 0x7072756e;

/** The archive's last line: what a prune must name, and where verification starts after it. */
export type ArchiveCheckpoint = AuditArchiveCheckpoint;

/** One lane's cut as a prune names it. */
export interface PrunedLane {
  lane: number;
  throughId: string;
  hash: string;
}

/**
 * What a prune names: the archive's checkpoint line, less what the hub recomputes. Without `lanes`
 * (an archive from before lanes) the top-level cut is lane 0's.
 */
type PrunedCheckpoint = Pick<ArchiveCheckpoint, 'throughId' | 'hash' | 'sha256'> & { lanes?: PrunedLane[] };

/** One lane's stretch of an archive: its events after the lane's start through `throughId`. */
interface LaneRange {
  lane: number;
  startHash: string;
  afterId: bigint | undefined;
  throughId: bigint;
}

/** What the archive's export reads: each lane's stretch, in lane order. */
export interface ArchiveRange {
  lanes: LaneRange[];
  /** The last archived event over all lanes (the archive's file name). */
  throughId: bigint;
}

/** A lane's stretch once read and verified. */
interface LaneResult {
  events: number;
  lastHash: string;
  lastId: bigint | undefined;
}

/** An event as one archive line: the same object the NDJSON export of `GET /api/v1/audit` writes. */
function eventLine(r: {
  id: bigint;
  at: Date;
  actor: string;
  action: string;
  scope: string;
  details: unknown;
  prevHash: string | null;
  hash: string | null;
  lane: number;
}): string {
  return `${JSON.stringify({
    id: r.id.toString(),
    at: r.at.toISOString(),
    actor: r.actor,
    action: r.action,
    scope: r.scope,
    details: r.details,
    prevHash: r.prevHash,
    hash: r.hash,
    lane: r.lane,
  })}\n`;
}

/**
 * The audit log is append-only and never pruned behind anyone's back. To shed old events an admin
 * first exports them (`archive`: NDJSON, lane by lane and each lane oldest first, chain-verified,
 * ending with a checkpoint line naming each lane's cut), keeps the file, then asks to prune exactly
 * that archive (`prune`, naming its checkpoint): the hub re-reads the same events, and deletes them
 * only if they still verify and give the same sha256 and each lane the same last hash. The
 * checkpoints it then stores (one per lane) are where verification starts, so every lane's chain
 * still verifies across the cut, and an edit after it still shows.
 *
 * The cut is per lane (each lane's last event before the archive's time): within a lane, id order is
 * commit order, so when the lane's last event is seen every earlier one of the lane is there; across
 * lanes a lower id may still commit later, so no single id cuts them all.
 */
@Injectable()
export class AuditArchive {
  constructor(
    private readonly db: Database,
    private readonly audit: AuditLog,
  ) {}

  /** The stretch an archive of the events written before `before` covers; refused when empty. */
  async range(before: Date): Promise<ArchiveRange> {
    const lanes: LaneRange[] = [];
    let archivedThrough: bigint | undefined;
    for (const lane of await chainLanes(this.db.prisma)) {
      const start = await chainStart(this.db.prisma, lane);
      if (start.afterId !== undefined && (archivedThrough === undefined || start.afterId > archivedThrough))
        archivedThrough = start.afterId;
      const last = await this.db.prisma.auditEvent.findFirst({
        where: {
          lane,
          at: { lt: before },
          ...(start.afterId !== undefined && { id: { gt: start.afterId } }),
        },
        orderBy: { id: 'desc' },
        select: { id: true },
      });
      if (last) lanes.push({ lane, startHash: start.hash, afterId: start.afterId, throughId: last.id });
    }
    if (lanes.length === 0) {
      throw new HubError(
        422,
        'nothing-to-archive',
        `no audit event before ${before.toISOString()} is left to archive${archivedThrough !== undefined ? ` (events through ${archivedThrough} were archived and pruned)` : ''}`,
        'before',
      );
    }
    return { lanes, throughId: lanes.reduce((max, l) => (l.throughId > max ? l.throughId : max), 0n) };
  }

  /**
   * The archive's lines: every event of the range, lane by lane and each lane oldest first, then
   * `{"checkpoint": {...}}`. A chain that does not verify ends with `{"broken": {...}}` instead, and
   * can never be pruned.
   */
  async *lines(range: ArchiveRange): AsyncGenerator<string> {
    const digest = createHash('sha256');
    const lanes: AuditArchiveLane[] = [];
    for (const laneRange of range.lanes) {
      let result: LaneResult | undefined;
      for await (const step of this.walk(this.db.prisma, laneRange, digest)) {
        if ('line' in step) {
          yield step.line;
        } else if (step.broken) {
          yield `${JSON.stringify({ broken: { ...step.broken, lane: laneRange.lane } })}\n`;
          return;
        } else {
          result = step;
        }
      }
      lanes.push({
        lane: laneRange.lane,
        throughId: laneRange.throughId.toString(),
        hash: result!.lastHash,
        events: result!.events,
        previousHash: laneRange.startHash,
      });
    }
    const last = lanes.find((l) => l.throughId === range.throughId.toString())!;
    const checkpoint: ArchiveCheckpoint = {
      throughId: last.throughId,
      hash: last.hash,
      events: lanes.reduce((n, l) => n + l.events, 0),
      sha256: digest.digest('hex'),
      previousHash: last.previousHash,
      lanes,
    };
    yield `${JSON.stringify({ checkpoint })}\n`;
  }

  /**
   * Deletes the events an archive holds, once they are shown to be exactly those: each lane's same
   * range from its current start, still verifying, with the archive's last hash, and the archive's
   * sha256 over all. Stores a checkpoint per lane (verification starts there), audits
   * `audit.pruned`, then deletes in batches.
   */
  async prune(checkpoint: PrunedCheckpoint, actor: AuditActor) {
    const named = checkpoint.lanes ?? [{ lane: 0, throughId: checkpoint.throughId, hash: checkpoint.hash }];
    // The top-level cut is one of the lanes' (the last archived event): a line edited in one place only is refused.
    const top = named.find((l) => l.throughId === checkpoint.throughId);
    if (!top)
      throw archiveMismatch('throughId', `no lane of the checkpoint ends at event ${checkpoint.throughId}`);
    if (top.hash !== checkpoint.hash) {
      throw archiveMismatch('hash', `lane ${top.lane} ends at event ${top.throughId} with hash ${top.hash}`);
    }
    const cuts = [...named].sort((a, b) => a.lane - b.lane);
    const stored = await this.db.prisma.$transaction(
      (tx) => this.storeCheckpoints(tx, checkpoint, cuts, actor),
      {
        timeout: 10 * 60_000,
        maxWait: 30_000,
      },
    );
    // After the checkpoints: verification already ignores these rows, so deleting them in batches,
    // each committed alone, never shows a half-pruned chain (and an interrupted prune just leaves rows).
    // Past months holding no event after its lane's cut go whole; then the rest, row by row.
    const months = await dropMonthPartitionsBefore(
      this.db.prisma,
      'AuditEvent',
      new Date(),
      stored.map((c) => ({ lane: c.lane, throughId: c.throughId })),
    );
    let deleted = months.rows;
    for (const cut of stored) {
      for (;;) {
        const n = await this.db.prisma.$executeRaw`
          DELETE FROM "AuditEvent"
           WHERE "id" IN (SELECT "id" FROM "AuditEvent" WHERE "lane" = ${cut.lane} AND "id" <= ${cut.throughId}
                           ORDER BY "id" LIMIT ${DELETE_BATCH})`;
        deleted += n;
        if (n < DELETE_BATCH) break;
      }
    }
    const last = stored.reduce((a, b) => (b.throughId > a.throughId ? b : a));
    return {
      pruned: deleted,
      checkpoint: {
        throughId: last.throughId.toString(),
        hash: last.hash,
        events: stored.reduce((n, c) => n + c.events, 0),
        sha256: last.sha256,
        prunedBy: last.prunedBy,
        prunedAt: last.prunedAt.toISOString(),
        lanes: stored.map((c) => ({
          lane: c.lane,
          throughId: c.throughId.toString(),
          hash: c.hash,
          events: c.events,
        })),
      },
    };
  }

  /**
   * The prune's transaction, under the prune lock: each lane's archived events re-read from its
   * current start must be exactly the archive's; then the checkpoints are stored and audited.
   */
  private async storeCheckpoints(
    tx: Tx,
    checkpoint: PrunedCheckpoint,
    cuts: PrunedLane[],
    actor: AuditActor,
  ) {
    await tx.$executeRaw`SELECT pg_advisory_xact_lock(${PRUNE_LOCK}::bigint)`;
    const digest = createHash('sha256');
    const results: (LaneResult & { lane: number; throughId: bigint })[] = [];
    for (const cut of cuts) {
      const throughId = BigInt(cut.throughId);
      const start = await chainStart(tx, cut.lane);
      if (start.afterId !== undefined && throughId <= start.afterId) {
        throw new HubError(
          409,
          'already-pruned',
          `events of lane ${cut.lane} through ${start.afterId} were already archived and pruned`,
          'throughId',
        );
      }
      const range = { lane: cut.lane, startHash: start.hash, afterId: start.afterId, throughId };
      const result = await this.reread(tx, range, digest);
      const mismatch =
        result.lastId !== throughId
          ? { path: 'throughId', why: `no event ${throughId} in lane ${cut.lane} after its start` }
          : result.lastHash !== cut.hash
            ? { path: 'hash', why: `event ${throughId} has hash ${result.lastHash}` }
            : undefined;
      if (mismatch) throw archiveMismatch(mismatch.path, mismatch.why);
      results.push({ ...result, lane: cut.lane, throughId });
    }
    const sha256 = digest.digest('hex');
    if (sha256 !== checkpoint.sha256)
      throw archiveMismatch('sha256', `the events read now give sha256 ${sha256}`);
    const rows = [];
    for (const r of results) {
      rows.push(
        await tx.auditCheckpoint.create({
          data: {
            lane: r.lane,
            throughId: r.throughId,
            hash: r.lastHash,
            events: r.events,
            sha256,
            prunedBy: actor,
          },
        }),
      );
    }
    const events = results.reduce((n, r) => n + r.events, 0);
    await this.audit.record(
      {
        actor,
        action: 'audit.pruned',
        scope: 'hub',
        details: {
          throughId: checkpoint.throughId,
          events,
          hash: checkpoint.hash,
          sha256,
          lanes: results.map((r) => ({ lane: r.lane, throughId: r.throughId.toString(), hash: r.lastHash })),
        },
      },
      tx,
    );
    return rows;
  }

  /** A lane's range read again and verified (a broken chain refuses the prune), fed to the digest. */
  private async reread(tx: Tx, range: LaneRange, digest: Hash): Promise<LaneResult> {
    let result: LaneResult = { events: 0, lastHash: range.startHash, lastId: undefined };
    for await (const step of this.walk(tx, range, digest)) {
      if ('line' in step) continue;
      if (step.broken) {
        throw new HubError(
          409,
          'audit-chain-broken',
          `the events to prune do not verify (${step.broken.reason} at event ${step.broken.id} in lane ${range.lane}): ${step.broken.message}; nothing was pruned`,
          'throughId',
        );
      }
      result = step;
    }
    return result;
  }

  /** A lane's range in id order, each as its archive line (fed to the digest), verified as it goes; then the end. */
  private async *walk(
    client: Tx,
    range: LaneRange,
    digest: Hash,
  ): AsyncGenerator<
    | { line: string }
    | { broken: NonNullable<ChainVerifier['broken']>; events?: never }
    | (LaneResult & { broken?: undefined })
  > {
    const verifier = new ChainVerifier(range.startHash);
    let after = range.afterId;
    let events = 0;
    let lastHash = range.startHash;
    let lastId: bigint | undefined;
    for (;;) {
      const rows = await client.auditEvent.findMany({
        where: { lane: range.lane, id: { lte: range.throughId, ...(after !== undefined && { gt: after }) } },
        orderBy: { id: 'asc' },
        take: PAGE,
      });
      for (const row of rows) {
        if (!verifier.next(row)) {
          yield { broken: verifier.broken! };
          return;
        }
        const line = eventLine(row);
        digest.update(line);
        events++;
        lastHash = row.hash ?? lastHash;
        lastId = row.id;
        yield { line };
      }
      if (rows.length < PAGE) break;
      after = rows[rows.length - 1]!.id;
    }
    yield { events, lastHash, lastId };
  }
}

function archiveMismatch(path: string, why: string): HubError {
  return new HubError(
    409,
    'archive-mismatch',
    `this is not an archive of the events the hub holds: ${why}; export again (GET /api/v1/audit/archive) and prune what it gives; nothing was pruned`,
    path,
  );
}
