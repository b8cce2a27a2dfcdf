import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../db/database.js';
import { createMigratedPglite } from '../testing/test-database.js';
import { AuditLog, type AuditQuery } from './audit.service.js';

/** Paging of `AuditLog.list` with and without a time range (keyset on (at, id) vs on id). */
describe('AuditLog.list paging (in-memory PGlite)', () => {
  let db: Database;
  let audit: AuditLog;
  const t0 = Date.parse('2026-05-01T00:00:00.000Z');

  beforeAll(async () => {
    db = await createMigratedPglite();
    audit = new AuditLog(db);
    // 40 events, four to an instant (as one recordMany stamps them), so that pages split ties on `at`.
    await db.prisma.auditEvent.createMany({
      data: Array.from({ length: 40 }, (_, i) => ({
        at: new Date(t0 + Math.floor(i / 4) * 60_000),
        actor: i % 2 ? 'alice' : 'agent:eu-1',
        action: i % 3 ? 'sync.succeeded' : 'rollout.paused',
        scope: `target:t${i % 5}`,
      })),
    });
  });

  afterAll(async () => {
    await db?.close();
  });

  async function allPages(q: AuditQuery, limit: number): Promise<string[]> {
    const ids: string[] = [];
    let cursor: string | undefined;
    for (let i = 0; i < 100; i++) {
      const page = await audit.list({ ...q, ...(cursor && { cursor }), limit });
      ids.push(...page.items.map((e) => e.id));
      if (!page.nextCursor) return ids;
      cursor = page.nextCursor;
    }
    throw new Error('more than 100 pages');
  }

  it('pages a time range through ties on `at` without skipping or repeating, in the id order', async () => {
    const range = { from: new Date(t0 + 2 * 60_000), to: new Date(t0 + 8 * 60_000) };
    for (const q of [range, { ...range, action: 'sync.' }, { from: range.from }, { to: range.to }]) {
      const whole = await audit.list({ ...q, limit: 500 });
      expect(whole.nextCursor).toBeNull();
      expect(whole.items.length).toBeGreaterThan(3);
      // Events stamped in chain order: the time order is the id order.
      const byId = [...whole.items].sort((a, b) => Number(BigInt(b.id) - BigInt(a.id)));
      expect(whole.items).toEqual(byId);
      for (const limit of [1, 3, 4]) expect(await allPages(q, limit)).toEqual(whole.items.map((e) => e.id));
    }
    const range24 = await audit.list({ ...range, limit: 500 });
    expect(range24.items).toHaveLength(24);
    for (const e of range24.items) {
      expect(Date.parse(e.at)).toBeGreaterThanOrEqual(range.from.getTime());
      expect(Date.parse(e.at)).toBeLessThan(range.to.getTime());
    }
  });

  it('a cursor from one page continues the same filter with or without a time range', async () => {
    const first = await audit.list({ actor: 'alice', limit: 5 });
    const next = await audit.list({ actor: 'alice', limit: 5, cursor: first.nextCursor ?? '' });
    const inRange = await audit.list({
      actor: 'alice',
      from: new Date(t0),
      limit: 5,
      cursor: first.nextCursor ?? '',
    });
    expect(inRange.items).toEqual(next.items);
  });

  it('a cursor naming no event is an empty page in a time range', async () => {
    expect(await audit.list({ from: new Date(t0), limit: 10, cursor: '999999' })).toEqual({
      items: [],
      nextCursor: null,
    });
  });

  it('in a time range, events whose clocks ran behind the chain are listed by time', async () => {
    // A replica whose clock was a minute behind appended after the others.
    const late = await db.prisma.auditEvent.create({
      data: { at: new Date(t0 + 60_000 + 30_000), actor: 'bob', action: 'pin.added', scope: 'target:t9' },
    });
    const page = await audit.list({ from: new Date(t0 + 60_000), to: new Date(t0 + 3 * 60_000), limit: 500 });
    const ats = page.items.map((e) => Date.parse(e.at));
    expect(ats).toEqual([...ats].sort((a, b) => b - a));
    expect(page.items.map((e) => e.id)).toContain(late.id.toString());
    expect(page.items.at(-5)?.id).toBe(late.id.toString());
  });
});
