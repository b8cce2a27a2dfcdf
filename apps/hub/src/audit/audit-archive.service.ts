import type { AuditActor } from '@flotilla/contract';
import { createHash } from 'node:crypto';
import type { AuditArchiveCheckpoint } from '@flotilla/contract';
import { Injectable } from '@nestjs/common';
import { Database } from '../db/database.js';
import { dropMonthPartitionsBefore } from '../db/partitions.js';
import { HubError } from '../common/hub-error.js';
import type { Prisma } from '../generated/prisma/client.js';
import { ChainVerifier } from './audit-chain.js';
import { AuditLog, chainStart } from './audit.service.js';

type Tx = Prisma.TransactionClient;

/** Events read per page while exporting or checking an archive. */
const PAGE = 1000;
/** Events deleted per statement once an archive is accepted. */
const DELETE_BATCH = 5000;
/** Only one prune at a time: "prune" in ASCII. */
const PRUNE_LOCK = 0x7072756e;

/** The archive's last line: what a prune must name, and where verification starts after it. */
export type ArchiveCheckpoint = AuditArchiveCheckpoint;

/** What a prune names: the archive's checkpoint line, less what the hub recomputes. */
type PrunedCheckpoint = Omit<ArchiveCheckpoint, 'previousHash' | 'events'>;

/** What the archive's export reads: events after the chain's start through `throughId`. */
interface ArchiveRange {
  startHash: string;
  afterId: bigint | undefined;
  throughId: bigint;
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
  })}\n`;
}

/**
 * The audit log is append-only and never pruned behind anyone's back. To shed old events an admin
 * first exports them (`archive`: NDJSON, oldest first, chain-verified, ending with a checkpoint
 * line), keeps the file, then asks to prune exactly that archive (`prune`, naming its checkpoint):
 * the hub re-reads the same events, and deletes them only if they still verify and give the same
 * sha256 and last hash. The checkpoint it then stores is where verification starts, so the chain
 * still verifies across the cut, and an edit after it still shows.
 */
@Injectable()
export class AuditArchive {
  constructor(
    private readonly db: Database,
    private readonly audit: AuditLog,
  ) {}

  /** The stretch an archive of the events written before `before` covers; refused when empty. */
  async range(before: Date): Promise<ArchiveRange> {
    const start = await chainStart(this.db.prisma);
    const last = await this.db.prisma.auditEvent.findFirst({
      where: { at: { lt: before }, ...(start.afterId !== undefined && { id: { gt: start.afterId } }) },
      orderBy: { id: 'desc' },
      select: { id: true },
    });
    if (!last) {
      throw new HubError(
        422,
        'nothing-to-archive',
        `no audit event before ${before.toISOString()} is left to archive${start.afterId !== undefined ? ` (events through ${start.afterId} were archived and pruned)` : ''}`,
        'before',
      );
    }
    return { startHash: start.hash, afterId: start.afterId, throughId: last.id };
  }

  /**
   * The archive's lines: every event of the range, oldest first, then `{"checkpoint": {...}}`. A
   * chain that does not verify ends with `{"broken": {...}}` instead, and can never be pruned.
   */
  async *lines(range: ArchiveRange): AsyncGenerator<string> {
    const digest = createHash('sha256');
    let checkpoint: ArchiveCheckpoint | undefined;
    const verified = this.walk(this.db.prisma, range, (line) => {
      digest.update(line);
    });
    for await (const step of verified) {
      if ('line' in step) {
        yield step.line;
        continue;
      }
      if (step.broken) {
        yield `${JSON.stringify({ broken: step.broken })}\n`;
        return;
      }
      checkpoint = {
        throughId: range.throughId.toString(),
        hash: step.lastHash,
        events: step.events,
        sha256: digest.digest('hex'),
        previousHash: range.startHash,
      };
    }
    if (checkpoint) yield `${JSON.stringify({ checkpoint })}\n`;
  }

  /**
   * Deletes the events an archive holds, once they are shown to be exactly those: the same range
   * from the chain's current start, still verifying, with the archive's last hash and sha256. Stores
   * the checkpoint (verification starts there), audits `audit.pruned`, then deletes in batches.
   */
  async prune(checkpoint: PrunedCheckpoint, actor: AuditActor) {
    const throughId = BigInt(checkpoint.throughId);
    const stored = await this.db.prisma.$transaction(
      (tx) => this.storeCheckpoint(tx, checkpoint, throughId, actor),
      { timeout: 10 * 60_000, maxWait: 30_000 },
    );
    // After the checkpoint: verification already ignores these rows, so deleting them in batches,
    // each committed alone, never shows a half-pruned chain (and an interrupted prune just leaves rows).
    // Past months holding no event after the checkpoint go whole; then the rest, row by row.
    const months = await dropMonthPartitionsBefore(this.db.prisma, 'AuditEvent', new Date(), throughId);
    let deleted = months.rows;
    for (;;) {
      const n = await this.db.prisma.$executeRaw`
        DELETE FROM "AuditEvent"
         WHERE "id" IN (SELECT "id" FROM "AuditEvent" WHERE "id" <= ${throughId}
                         ORDER BY "id" LIMIT ${DELETE_BATCH})`;
      deleted += n;
      if (n < DELETE_BATCH) break;
    }
    return {
      pruned: deleted,
      checkpoint: {
        throughId: stored.throughId.toString(),
        hash: stored.hash,
        events: stored.events,
        sha256: stored.sha256,
        prunedBy: stored.prunedBy,
        prunedAt: stored.prunedAt.toISOString(),
      },
    };
  }

  /**
   * The prune's transaction, under the prune lock: the archived events re-read from the chain's
   * current start must be exactly the archive's; then the checkpoint is stored and audited.
   */
  private async storeCheckpoint(tx: Tx, checkpoint: PrunedCheckpoint, throughId: bigint, actor: AuditActor) {
    await tx.$executeRaw`SELECT pg_advisory_xact_lock(${PRUNE_LOCK}::bigint)`;
    const start = await chainStart(tx);
    if (start.afterId !== undefined && throughId <= start.afterId) {
      throw new HubError(
        409,
        'already-pruned',
        `events through ${start.afterId} were already archived and pruned`,
        'throughId',
      );
    }
    const { result, sha256 } = await this.reread(tx, {
      startHash: start.hash,
      afterId: start.afterId,
      throughId,
    });
    const mismatch =
      result?.lastId !== throughId
        ? { path: 'throughId', why: `no event ${throughId} after the chain's start` }
        : result.lastHash !== checkpoint.hash
          ? { path: 'hash', why: `event ${throughId} has hash ${result.lastHash}` }
          : sha256 !== checkpoint.sha256
            ? { path: 'sha256', why: `the events read now give sha256 ${sha256}` }
            : undefined;
    if (mismatch || !result) {
      throw new HubError(
        409,
        'archive-mismatch',
        `this is not an archive of the events the hub holds: ${mismatch?.why ?? 'no events'}; export again (GET /api/v1/audit/archive) and prune what it gives; nothing was pruned`,
        mismatch?.path ?? 'throughId',
      );
    }
    const row = await tx.auditCheckpoint.create({
      data: { throughId, hash: result.lastHash, events: result.events, sha256, prunedBy: actor },
    });
    await this.audit.record(
      {
        actor,
        action: 'audit.pruned',
        scope: 'hub',
        details: { throughId: checkpoint.throughId, events: result.events, hash: result.lastHash, sha256 },
      },
      tx,
    );
    return row;
  }

  /** The range's events read again and verified (a broken chain refuses the prune), and their sha256. */
  private async reread(tx: Tx, range: ArchiveRange) {
    const digest = createHash('sha256');
    let result: { events: number; lastHash: string; lastId: bigint | undefined } | undefined;
    for await (const step of this.walk(tx, range, (line) => digest.update(line))) {
      if ('line' in step) continue;
      if (step.broken) {
        throw new HubError(
          409,
          'audit-chain-broken',
          `the events to prune do not verify (${step.broken.reason} at event ${step.broken.id}): ${step.broken.message}; nothing was pruned`,
          'throughId',
        );
      }
      result = step;
    }
    return { result, sha256: digest.digest('hex') };
  }

  /** The range's events in id order, each as its archive line, verified as it goes; then the end. */
  private async *walk(
    client: Tx,
    range: ArchiveRange,
    onLine: (line: string) => void,
  ): AsyncGenerator<
    | { line: string }
    | { broken: NonNullable<ChainVerifier['broken']>; events?: never }
    | { broken?: undefined; events: number; lastHash: string; lastId: bigint | undefined }
  > {
    const verifier = new ChainVerifier(range.startHash);
    let after = range.afterId;
    let events = 0;
    let lastHash = range.startHash;
    let lastId: bigint | undefined;
    for (;;) {
      const rows = await client.auditEvent.findMany({
        where: { id: { lte: range.throughId, ...(after !== undefined && { gt: after }) } },
        orderBy: { id: 'asc' },
        take: PAGE,
      });
      for (const row of rows) {
        if (!verifier.next(row)) {
          yield { broken: verifier.broken! };
          return;
        }
        const line = eventLine(row);
        onLine(line);
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
