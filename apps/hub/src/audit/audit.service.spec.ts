import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../db/database.js';
import { createMigratedPglite } from '../testing/test-database.js';
import { GENESIS_HASH } from './audit-chain.js';
import { AuditLog } from './audit.service.js';

type Row = { id: bigint; lane: number; prevHash: string | null; hash: string | null };

/** Each lane's events, in id order, start at genesis and link one to the next. */
function expectLanesChained(rows: Row[]): Map<number, Row[]> {
  const lanes = new Map<number, Row[]>();
  for (const row of [...rows].sort((a, b) => (a.id < b.id ? -1 : 1))) {
    lanes.set(row.lane, [...(lanes.get(row.lane) ?? []), row]);
  }
  for (const chain of lanes.values()) {
    expect(chain[0]?.prevHash).toBe(GENESIS_HASH);
    for (let i = 1; i < chain.length; i++) expect(chain[i]?.prevHash).toBe(chain[i - 1]?.hash);
  }
  return lanes;
}

// On PGlite (the embedded database): the advisory lock statements run there too, and the chains hold.
describe('AuditLog (in-memory PGlite)', () => {
  let db: Database;
  let audit: AuditLog;

  beforeAll(async () => {
    db = await createMigratedPglite();
    audit = new AuditLog(db);
  });

  afterAll(async () => {
    await db.close();
  });

  it('chains events appended alone, inside a caller transaction, and concurrently', async () => {
    await audit.record({
      actor: 'user:alice',
      action: 'cluster.created',
      scope: 'cluster:eu1',
      details: { n: 1 },
    });
    await db.prisma.$transaction(async (tx) => {
      await audit.record({ actor: 'user:bob', action: 'appset.applied', scope: 'appset:web' }, tx);
    });
    await Promise.all(
      Array.from({ length: 5 }, (_, i) =>
        audit.record({ actor: 'user:carol', action: 'sync.done', scope: `target:t${i}`, details: { i } }),
      ),
    );
    const rows = await db.prisma.auditEvent.findMany({ orderBy: { id: 'asc' } });
    expect(rows).toHaveLength(7);
    const lanes = expectLanesChained(rows);
    for (const lane of lanes.keys()) expect(lane).toBeLessThan(8);
    expect(await audit.verify({ full: true })).toMatchObject({ valid: true, checked: 7, unchained: 0 });
  });

  it('a rolled-back transaction leaves no event and no gap in the chain', async () => {
    await expect(
      db.prisma.$transaction(async (tx) => {
        await audit.record({ actor: 'user:dave', action: 'cluster.created', scope: 'cluster:x' }, tx);
        throw new Error('the mutation failed');
      }),
    ).rejects.toThrow('the mutation failed');
    await audit.record({ actor: 'user:erin', action: 'cluster.created', scope: 'cluster:y' });
    expect(await audit.verify({ full: true })).toMatchObject({ valid: true, checked: 8, unchained: 0 });
  });

  it('filters by time, actor, scope, scope prefix, action prefix and outcome', async () => {
    const all = await audit.list({ limit: 100 });
    expect(all.items).toHaveLength(8);
    expect((await audit.list({ limit: 100, actor: 'user:carol' })).items).toHaveLength(5);
    expect((await audit.list({ limit: 100, scope: 'cluster:eu1' })).items.map((e) => e.actor)).toEqual([
      'user:alice',
    ]);
    expect((await audit.list({ limit: 100, scopePrefix: 'target:' })).items).toHaveLength(5);
    expect((await audit.list({ limit: 100, action: 'sync.' })).items).toHaveLength(5);
    await audit.record({ actor: 'agent:eu1', action: 'sync.failed', scope: 'target:t9' });
    await audit.record({
      actor: 'user:ops',
      action: 'rollout.step',
      scope: 'appset:web',
      details: { outcome: 'Failed' },
    });
    const failed = await audit.list({ limit: 100, outcome: 'Failed' });
    expect(failed.items.map((e) => e.action)).toEqual(['rollout.step', 'sync.failed']);
    const first = all.items.at(-1)!;
    expect((await audit.list({ limit: 100, to: new Date(first.at) })).items).toHaveLength(0);
    expect((await audit.list({ limit: 100, from: new Date(first.at) })).items).toHaveLength(10);
    expect(await audit.verify({ full: true })).toMatchObject({ valid: true, checked: 10, unchained: 0 });
  });

  it('a transaction that records several times writes every event to one lane, in order', async () => {
    const before = await db.prisma.auditEvent.count();
    await db.prisma.$transaction(async (tx) => {
      for (let i = 0; i < 6; i++)
        await audit.record({ actor: 'user:fay', action: 'step', scope: `s:${i}` }, tx);
      await audit.recordMany(
        [0, 1].map((i) => ({ actor: 'user:fay', action: 'many', scope: `m:${i}` })),
        tx,
      );
    });
    const mine = await db.prisma.auditEvent.findMany({
      where: { actor: 'user:fay' },
      orderBy: { id: 'asc' },
    });
    expect(mine).toHaveLength(8);
    expect(new Set(mine.map((r) => r.lane)).size).toBe(1);
    for (let i = 1; i < mine.length; i++) expect(mine[i]?.prevHash).toBe(mine[i - 1]?.hash);
    expect(await db.prisma.auditEvent.count()).toBe(before + 8);
    expect(await audit.verify({ full: true })).toMatchObject({ valid: true });
  });
});

describe('AuditLog with one lane (FLOTILLA_AUDIT_CHAIN_LANES=1)', () => {
  let db: Database;

  beforeAll(async () => {
    db = await createMigratedPglite();
  });

  afterAll(async () => {
    await db.close();
  });

  it('writes one chain in lane 0, as before lanes', async () => {
    const audit = new AuditLog(db, { audit: { chainLanes: 1 } });
    await Promise.all(
      Array.from({ length: 6 }, (_, i) => audit.record({ actor: 'user:gus', action: 'x', scope: `s:${i}` })),
    );
    const rows = await db.prisma.auditEvent.findMany({ orderBy: { id: 'asc' } });
    expect([...expectLanesChained(rows).keys()]).toEqual([0]);
    const ids = rows.map((r) => r.id.toString());
    expect(await audit.verify({ full: true })).toMatchObject({
      valid: true,
      checked: 6,
      unchained: 0,
      mode: 'full',
      complete: true,
      lanes: [
        {
          lane: 0,
          valid: true,
          checked: 6,
          unchained: 0,
          fromId: null,
          throughId: ids.at(-1),
          caughtUp: true,
        },
      ],
    });
    // Stored as verified: an incremental call then has nothing new to check.
    expect(await audit.verify()).toMatchObject({
      valid: true,
      checked: 0,
      lastFullPass: { valid: true, checked: 6 },
    });
  });
});
