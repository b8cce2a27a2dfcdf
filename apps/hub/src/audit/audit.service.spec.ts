import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../db/database.js';
import { createMigratedPglite } from '../testing/test-database.js';
import { GENESIS_HASH } from './audit-chain.js';
import { AuditLog } from './audit.service.js';

// On PGlite (the embedded database): the advisory lock statement runs there too, and the chain holds.
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
    expect(rows[0]?.prevHash).toBe(GENESIS_HASH);
    for (let i = 1; i < rows.length; i++) expect(rows[i]?.prevHash).toBe(rows[i - 1]?.hash);
    expect(await audit.verify()).toEqual({ valid: true, checked: 7, unchained: 0 });
  });

  it('a rolled-back transaction leaves no event and no gap in the chain', async () => {
    await expect(
      db.prisma.$transaction(async (tx) => {
        await audit.record({ actor: 'user:dave', action: 'cluster.created', scope: 'cluster:x' }, tx);
        throw new Error('the mutation failed');
      }),
    ).rejects.toThrow('the mutation failed');
    await audit.record({ actor: 'user:erin', action: 'cluster.created', scope: 'cluster:y' });
    expect(await audit.verify()).toEqual({ valid: true, checked: 8, unchained: 0 });
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
    expect(await audit.verify()).toEqual({ valid: true, checked: 10, unchained: 0 });
  });
});
