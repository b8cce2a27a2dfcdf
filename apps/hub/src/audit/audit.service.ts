import { Injectable } from '@nestjs/common';
import { Database } from '../db/database.js';
import { toJson } from '../common/json.js';
import type { Prisma } from '../generated/prisma/client.js';

export interface AuditEntry {
  actor: string;
  action: string;
  scope: string;
  details?: Record<string, unknown>;
}

type Tx = Prisma.TransactionClient;

/** Append-only record of what changed, who did it and why. Nothing here updates or deletes. */
@Injectable()
export class AuditLog {
  constructor(private readonly db: Database) {}

  /** Inside the caller's transaction when given one, so the record and the change land together. */
  async record(entry: AuditEntry, tx?: Tx): Promise<void> {
    const client = tx ?? this.db.prisma;
    await client.auditEvent.create({
      data: {
        actor: entry.actor,
        action: entry.action,
        scope: entry.scope,
        details: toJson(entry.details ?? {}),
      },
    });
  }

  async recordMany(entries: AuditEntry[], tx?: Tx): Promise<void> {
    if (entries.length === 0) return;
    const client = tx ?? this.db.prisma;
    await client.auditEvent.createMany({
      data: entries.map((e) => ({
        actor: e.actor,
        action: e.action,
        scope: e.scope,
        details: toJson(e.details ?? {}),
      })),
    });
  }

  async list(q: { scope?: string; action?: string; limit: number; cursor?: string }) {
    const rows = await this.db.prisma.auditEvent.findMany({
      where: {
        ...(q.scope ? { scope: q.scope } : {}),
        ...(q.action ? { action: { startsWith: q.action } } : {}),
      },
      orderBy: { id: 'desc' },
      take: q.limit + 1,
      ...(q.cursor ? { cursor: { id: BigInt(q.cursor) }, skip: 1 } : {}),
    });
    const page = rows.slice(0, q.limit);
    return {
      items: page.map((r) => ({
        id: r.id.toString(),
        at: r.at.toISOString(),
        actor: r.actor,
        action: r.action,
        scope: r.scope,
        details: r.details,
      })),
      nextCursor: rows.length > q.limit ? (page.at(-1)?.id.toString() ?? null) : null,
    };
  }
}
