import type { AuditActor, AuditEventView, AuditPageView, AuditVerifyView } from '@flotilla/contract';
import { Inject, Injectable } from '@nestjs/common';
import { HUB_CONFIG, type HubConfig } from '../config/hub-config.js';
import { Database } from '../db/database.js';
import { toJson } from '../common/json.js';
import { everyItem } from '../common/record-export.js';
import { currentOrigin, type RequestOrigin } from '../common/request-origin.js';
import type { Prisma } from '../generated/prisma/client.js';
import { auditHash } from './audit-chain.js';
import { ChainLanes, chainStart } from './audit-lanes.js';
import { verifyChain } from './audit-verification.js';

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

/** Audit rows per INSERT (7 columns each, far below PostgreSQL's bind-parameter limit). */
const INSERT_CHUNK = 1000;

/**
 * Append-only record of what changed, who did it and why, hash-chained so that tampering shows.
 * Nothing here updates or deletes. Every audit event in the hub goes through `record`.
 */
@Injectable()
export class AuditLog {
  private readonly lanes: ChainLanes;

  constructor(
    private readonly db: Database,
    // Optional for specs that build an AuditLog by hand; the hub always injects its configuration.
    @Inject(HUB_CONFIG) config: Pick<HubConfig, 'audit'> = { audit: { chainLanes: 8 } },
  ) {
    this.lanes = new ChainLanes(config.audit.chainLanes);
  }

  /**
   * Inside the caller's transaction when given one, so the record and the change land together;
   * else in a transaction of its own. The transaction takes one lane's lock (ChainLanes) until
   * commit, so two events never link to the same predecessor in a lane, while other transactions
   * append to other lanes. Record last in a transaction: one that holds a lane and then waits for a
   * row another appender has locked can be a deadlock, which PostgreSQL breaks by aborting one.
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
    // PGlite has one connection, so it is serial anyway; the functions exist there too.
    const lane = await this.lanes.acquire(tx);
    const tail = await tx.auditEvent.findFirst({
      where: { lane },
      orderBy: { id: 'desc' },
      select: { hash: true },
    });
    // Every event of the lane pruned (archived through its last one): it goes on from the checkpoint.
    let prevHash = tail?.hash ?? (await chainStart(tx, lane)).hash;
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
    // ordinality), and the lane lock keeps the lane's other appenders out until commit: they take
    // their ids after this commit, so larger ones. Within a lane, id order is chain order (and
    // commit order), as `verify` walks it; across lanes ids interleave, and a lower id in one lane
    // may commit after a higher one in another. Raw SQL: Prisma's createMany costs ~1.5 ms a row, and this runs
    // while holding the chain lock.
    for (let i = 0; i < rows.length; i += INSERT_CHUNK) {
      const chunk = rows.slice(i, i + INSERT_CHUNK);
      await tx.$executeRaw`
        INSERT INTO "AuditEvent" ("at", "actor", "action", "scope", "details", "prevHash", "hash", "lane")
        SELECT v."at"::timestamp, v."actor", v."action", v."scope", v."details"::jsonb, v."prevHash", v."hash",
               ${lane}::smallint
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
   * middle of a 2 M-event year). The two orders agree closely: `append` stamps `at` under the lane
   * lock, just before taking ids; they differ where concurrent transactions (in different chain lanes)
   * interleave or hub replicas' clocks disagreed, and then a time range is asked in time.
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
   * Walks every lane's chain oldest first, a page at a time, and stops a lane at its first break.
   * Incremental (the default): only the events after each lane's stored verified position, at most
   * VERIFY_BUDGET of them. `full`: every lane from its archive checkpoint (or genesis). Valid when every
   * lane is; the break shown is the earliest (lowest id) of those found. See audit-verification.ts.
   */
  verify(options: { full?: boolean } = {}): Promise<AuditVerifyView> {
    return verifyChain(this.db.prisma, { full: options.full ?? false });
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
  lane: number;
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
    lane: r.lane,
  };
}
