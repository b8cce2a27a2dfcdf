import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuditLog } from '../audit/audit.service.js';
import type { Database } from '../db/database.js';
import { openTwoReplicas, type TwoReplicas } from '../testing/test-database.js';
import { unreadAuditEvents } from './audit-cursor.js';

// Two connection pools on one PostgreSQL database: a transaction that took its id first commits
// after another one, in another chain lane, was already read.
describe('the notification cursor over audit chain lanes (PostgreSQL)', () => {
  let replicas: TwoReplicas | undefined;
  let one: Database;
  let two: Database;

  beforeAll(async () => {
    replicas = await openTwoReplicas();
    ({ one, two } = replicas);
  }, 120_000);

  afterAll(async () => {
    await replicas?.close();
  });

  const read = () => one.prisma.$transaction((tx) => unreadAuditEvents(tx, 500));

  it('reads an event that commits after a higher id in another lane was read, and each event once', async () => {
    const audit = new AuditLog(one, { audit: { chainLanes: 4 } });
    await audit.record({ actor: 'user:a', action: 'first', scope: 'x' });
    expect((await read()).map((e) => e.action)).toEqual(['first']);

    let commit!: () => void;
    const held = new Promise<void>((resolve) => (commit = resolve));
    let recorded!: () => void;
    const inserted = new Promise<void>((resolve) => (recorded = resolve));
    // Held open on purpose while the other replica writes: a loaded machine must not hit Prisma's 5 s.
    const slow = one.prisma.$transaction(
      async (tx) => {
        await audit.record({ actor: 'user:a', action: 'late', scope: 'x' }, tx);
        recorded();
        await held;
      },
      { timeout: 60_000 },
    );
    await inserted;
    await new AuditLog(two, { audit: { chainLanes: 4 } }).record({
      actor: 'user:b',
      action: 'early',
      scope: 'y',
    });
    expect((await read()).map((e) => e.action)).toEqual(['early']);
    commit();
    await slow;

    const late = await read();
    expect(late.map((e) => e.action)).toEqual(['late']);
    const early = await one.prisma.auditEvent.findFirstOrThrow({ where: { action: 'early' } });
    expect(late[0]!.id).toBeLessThan(early.id);
    expect(await read()).toEqual([]);
  });
});
