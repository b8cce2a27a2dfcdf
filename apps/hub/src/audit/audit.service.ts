import type { AuditActor, AuditEventView, AuditPageView, AuditVerifyView } from '@flotilla/contract';
import { Injectable } from '@nestjs/common';
import { Database } from '../db/database.js';
import { toJson } from '../common/json.js';
import { everyItem } from '../common/record-export.js';
import { currentOrigin, type RequestOrigin } from '../common/request-origin.js';
import type { Prisma } from '../generated/prisma/client.js';
import { auditHash, ChainVerifier, GENESIS_HASH } from './audit-chain.js';

export interface AuditEntry {
  /** Named one way: see AuditActor (`user:`, `token:`, `agent:`, `git:`, `manager:`, `system:`). */
  actor: AuditActor;
  action: string;
  scope: string;
  details?: Record<string, unknown>;
  /**
   * From where (client address and User-Agent), stored as `details.origin`. Left out, it is the
   * origin of the request being served, if any; `null` records none (work no request started, or a
   * group of agent batches that each carry their own).
   */
  origin?: RequestOrigin | null;
}

export interface AuditQuery {
  from?: Date;
  to?: Date;
  actor?: string;
  scope?: string;
  scopePrefix?: string;
  action?: string;
  outcome?: string;
  cursor?: string;
}

export type { AuditEventView } from '@flotilla/contract';

type Tx = Prisma.TransactionClient;

/** Any constant works as long as every appender uses the same one; this is "audit" in ASCII. */
const AUDIT_CHAIN_LOCK = 0x61756469;
const VERIFY_PAGE = 1000;
/** Audit rows per INSERT (7 columns each, far below PostgreSQL's bind-parameter limit). */
const INSERT_CHUNK = 1000;

/**
 * Append-only record of what changed, who did it and why, hash-chained so that tampering shows.
 * Nothing here updates or deletes. Every audit event in the hub goes through `record`.
 */
@Injectable()
export class AuditLog {
  constructor(private readonly db: Database) {}

  /**
   * Inside the caller's transaction when given one, so the record and the change land together;
   * else in a transaction of its own. The advisory lock serialises appenders across connections
   * and hub replicas until commit, so two events never link to the same predecessor. Record last in
   * a transaction: a transaction that holds the lock and then waits for a row another appender has
   * locked is a deadlock, which PostgreSQL breaks by aborting one of the two.
   */
  async record(entry: AuditEntry, tx?: Tx): Promise<void> {
    return this.recordMany([entry], tx);
  }

  /**
   * Several events, chained in the given order, for one lock acquisition, one tail read and one
   * multi-row INSERT — what a batch of agent reports needs, so that a fleet's reports do not queue
   * one by one on the chain lock. Same transaction rules as `record`.
   */
  async recordMany(entries: AuditEntry[], tx?: Tx): Promise<void> {
    if (entries.length === 0) return;
    if (tx) return this.append(tx, entries);
    await this.db.prisma.$transaction((t) => this.append(t, entries));
  }

  private async append(tx: Tx, entries: AuditEntry[]): Promise<void> {
    // PGlite has one connection, so it is serial anyway; the function exists there too.
    await tx.$executeRaw`SELECT pg_advisory_xact_lock(${AUDIT_CHAIN_LOCK}::bigint)`;
    const tail = await tx.auditEvent.findFirst({ orderBy: { id: 'desc' }, select: { hash: true } });
    // Every event pruned (archived through the last one): the chain goes on from the checkpoint.
    let prevHash = tail?.hash ?? (await chainStart(tx)).hash;
    // Stored as read back (JSON round trip) and at millisecond precision, so the hash recomputes.
    const at = new Date();
    const requestOrigin = currentOrigin();
    const rows = entries.map((entry) => {
      const origin = entry.origin === undefined ? requestOrigin : entry.origin;
      const details = toJson({ ...entry.details, ...(origin && { origin }) });
      const content = { at, actor: entry.actor, action: entry.action, scope: entry.scope, details };
      const row = { ...content, prevHash, hash: auditHash(prevHash, content) };
      prevHash = row.hash;
      return row;
    });
    // The INSERT takes ids from the sequence in the order the SELECT yields rows (ORDER BY the
    // ordinality), and the lock keeps every other appender out until commit, so id order is chain
    // order, as `verify` walks it. Raw SQL: Prisma's createMany costs ~1.5 ms a row, and this runs
    // while holding the chain lock.
    for (let i = 0; i < rows.length; i += INSERT_CHUNK) {
      const chunk = rows.slice(i, i + INSERT_CHUNK);
      await tx.$executeRaw`
        INSERT INTO "AuditEvent" ("at", "actor", "action", "scope", "details", "prevHash", "hash")
        SELECT v."at"::timestamp, v."actor", v."action", v."scope", v."details"::jsonb, v."prevHash", v."hash"
        FROM unnest(
          ${chunk.map((r) => r.at.toISOString())}::text[],
          ${chunk.map((r) => r.actor)}::text[],
          ${chunk.map((r) => r.action)}::text[],
          ${chunk.map((r) => r.scope)}::text[],
          ${chunk.map((r) => JSON.stringify(r.details))}::text[],
          ${chunk.map((r) => r.prevHash)}::text[],
          ${chunk.map((r) => r.hash)}::text[]
        ) WITH ORDINALITY AS v("at", "actor", "action", "scope", "details", "prevHash", "hash", "n")
        ORDER BY v."n"`;
    }
  }

  private where(q: AuditQuery): Prisma.AuditEventWhereInput {
    const scope: Prisma.StringFilter = {
      ...(q.scope !== undefined && { equals: q.scope }),
      ...(q.scopePrefix !== undefined && { startsWith: likeLiteral(q.scopePrefix) }),
    };
    return {
      ...((q.from || q.to) && { at: { ...(q.from && { gte: q.from }), ...(q.to && { lt: q.to }) } }),
      ...(q.actor !== undefined && { actor: q.actor }),
      ...(Object.keys(scope).length > 0 && { scope }),
      ...(q.action !== undefined && { action: { startsWith: likeLiteral(q.action) } }),
      // Sync events carry their outcome in the action (`sync.failed`); others may carry `details.outcome`.
      ...(q.outcome !== undefined && {
        OR: [
          { action: { endsWith: likeLiteral(`.${q.outcome.toLowerCase()}`) } },
          { details: { path: ['outcome'], equals: q.outcome } },
        ],
      }),
    };
  }

  /**
   * Newest first, one page; `nextCursor` is the id of the page's last event, whatever the filter.
   *
   * Without a time range the order is the chain's, by id, which the (actor, id) index and the
   * primary key serve directly. With one (`from`, `to` or both) the order is by (at, id), paged by
   * keyset: PostgreSQL then walks the `at` index backwards inside the range and the filters discard
   * at most the range's own events. Ordered by id, it would walk the primary key down from the
   * newest event and discard everything newer than the range first (1.8 M rows for a month in the
   * middle of a 2 M-event year). The two orders agree, because `append` stamps `at` under the chain
   * lock; they differ only where hub replicas' clocks disagreed, and then a time range is asked in
   * time.
   */
  async list(q: AuditQuery & { limit: number }): Promise<AuditPageView> {
    const rows = q.from || q.to ? await this.pageByTime(q) : await this.pageById(q);
    const page = rows.slice(0, q.limit);
    return {
      items: page.map(view),
      nextCursor: rows.length > q.limit ? (page.at(-1)?.id.toString() ?? null) : null,
    };
  }

  private pageById(q: AuditQuery & { limit: number }) {
    // Ids are unique but not a key of their own (the partitioned table's key is (id, at)): the page
    // after a cursor is the ids below it.
    return this.db.prisma.auditEvent.findMany({
      where: q.cursor ? { AND: [this.where(q), { id: { lt: BigInt(q.cursor) } }] } : this.where(q),
      orderBy: { id: 'desc' },
      take: q.limit + 1,
    });
  }

  private async pageByTime(q: AuditQuery & { limit: number }) {
    const where: Prisma.AuditEventWhereInput[] = [this.where(q)];
    if (q.cursor) {
      const id = BigInt(q.cursor);
      // The cursor stays the plain id the API has always handed out; its `at` is one primary-key read (the key is (id, at)).
      const after = await this.db.prisma.auditEvent.findFirst({ where: { id }, select: { at: true } });
      if (!after) return [];
      // (at, id) < the cursor's. The plain `lte` is redundant but is where the index range scan can
      // start; the OR alone is only a filter, applied from the end of the range down.
      where.push({ at: { lte: after.at } });
      where.push({ OR: [{ at: { lt: after.at } }, { at: after.at, id: { lt: id } }] });
    }
    return this.db.prisma.auditEvent.findMany({
      where: { AND: where },
      orderBy: [{ at: 'desc' }, { id: 'desc' }],
      take: q.limit + 1,
    });
  }

  /** Every matching event (at most `limit`), newest first, fetched a page at a time for export. */
  stream(q: AuditQuery & { limit?: number }): AsyncGenerator<AuditEventView> {
    return everyItem((cursor, limit) => this.list({ ...q, cursor, limit }), q);
  }

  /**
   * Walks the whole chain oldest first, a page at a time, and stops at the first break. Once events
   * were archived and pruned, the chain starts at the latest checkpoint (the last pruned event's hash).
   */
  async verify(): Promise<AuditVerifyView> {
    const start = await chainStart(this.db.prisma);
    const verifier = new ChainVerifier(start.hash);
    let after: bigint | undefined = start.afterId;
    for (;;) {
      const rows = await this.db.prisma.auditEvent.findMany({
        ...(after !== undefined && { where: { id: { gt: after } } }),
        orderBy: { id: 'asc' },
        take: VERIFY_PAGE,
      });
      for (const row of rows) if (!verifier.next(row)) break;
      const last = rows.at(-1);
      if (verifier.broken || !last || rows.length < VERIFY_PAGE) break;
      after = last.id;
    }
    return {
      valid: verifier.broken === undefined,
      checked: verifier.checked,
      unchained: verifier.unchained,
      ...(verifier.broken && { firstBrokenAt: verifier.broken }),
    };
  }
}

/**
 * Prisma turns startsWith/endsWith into LIKE without escaping the pattern: `%` and `_` would match
 * anything, and a trailing `\` fails the query. Escaped with LIKE's default escape, `\`, they are
 * the characters they look like.
 */
function likeLiteral(s: string): string {
  return s.replace(/[\\%_]/g, '\\$&');
}

function view(r: {
  id: bigint;
  at: Date;
  actor: string;
  action: string;
  scope: string;
  details: unknown;
  prevHash: string | null;
  hash: string | null;
}): AuditEventView {
  return {
    id: r.id.toString(),
    at: r.at.toISOString(),
    actor: r.actor,
    action: r.action,
    scope: r.scope,
    details: r.details,
    prevHash: r.prevHash,
    hash: r.hash,
  };
}

/**
 * Where the chain starts: after the latest archive checkpoint (events up to `afterId` were pruned,
 * `hash` is the last one's), or at genesis.
 */
export async function chainStart(
  client: Pick<Tx, 'auditCheckpoint'>,
): Promise<{ hash: string; afterId: bigint | undefined }> {
  const cp = await client.auditCheckpoint.findFirst({
    orderBy: { throughId: 'desc' },
    select: { throughId: true, hash: true },
  });
  return cp ? { hash: cp.hash, afterId: cp.throughId } : { hash: GENESIS_HASH, afterId: undefined };
}
