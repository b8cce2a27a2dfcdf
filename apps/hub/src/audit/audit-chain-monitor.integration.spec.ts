import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadHubConfig } from '../config/hub-config.js';
import type { Database } from '../db/database.js';
import { HubMetrics } from '../metrics/hub-metrics.service.js';
import { createTestPostgres, openTestDatabase, type TestPostgres } from '../testing/test-database.js';
import { auditHash } from './audit-chain.js';
import { AuditChainMonitor } from './audit-chain-monitor.service.js';
import { AuditLog } from './audit.service.js';

// The chain monitor across hub restarts, on real PostgreSQL: each "hub" is a monitor started and
// stopped through its Nest lifecycle hooks, on its own metrics registry, over one database. What it
// read is asserted by its counter of events read, never by time. One lane, so a break stops exactly
// one walk and the counts are exact.

const config = loadHubConfig({ FLOTILLA_DEV_MODE: '1', FLOTILLA_AUDIT_CHAIN_LANES: '1' });

describe('the audit chain monitor after a restart (PostgreSQL)', () => {
  let server: TestPostgres | undefined;
  let db: Database;
  let audit: AuditLog;

  beforeAll(async () => {
    server = await createTestPostgres();
    db = await openTestDatabase(server.url);
    audit = new AuditLog(db, config);
  }, 120_000);

  afterAll(async () => {
    await db?.close();
    await server?.drop();
  });

  const write = async (n: number, tag: string) => {
    for (let i = 0; i < n; i++) await audit.record({ actor: 'user:ann', action: tag, scope: `${tag}:${i}` });
  };

  /** A hub's monitor, started as Nest starts it (its first tick runs at once); stopped by `stop`. */
  const startHub = () => {
    const metrics = new HubMetrics(db);
    const monitor = new AuditChainMonitor(db, metrics, config);
    const value = async (name: string) =>
      (await metrics.registry.getSingleMetric(name)!.get()).values[0]?.value ?? 0;
    monitor.onApplicationBootstrap();
    return {
      read: () => value('flotilla_audit_chain_read_events_total'),
      valid: () => value('flotilla_audit_chain_valid'),
      /** The first tick's end: the gauge of events checked is set when a tick ends. */
      ticked: () => value('flotilla_audit_chain_verified_events'),
      stop: () => monitor.onApplicationShutdown(),
    };
  };
  const storedThrough = async () =>
    (await db.prisma.auditChainVerified.findUniqueOrThrow({ where: { lane: 0 } })).throughId;
  const lastPass = () => db.prisma.auditFullPass.findUniqueOrThrow({ where: { id: 1 } });

  it('resumes from the stored position and reports a break among the events written while it was stopped, without rereading the verified prefix', async () => {
    await write(300, 'before');
    const first = startHub();
    // No full pass stored yet: the first start reads the whole chain, and records the pass.
    await expect.poll(first.read).toBe(300);
    await expect.poll(first.ticked).toBe(300);
    await first.stop();
    expect(await lastPass()).toMatchObject({ valid: true, checked: 300 });

    await write(20, 'while-stopped');
    const tampered = await db.prisma.auditEvent.findFirstOrThrow({ where: { scope: 'while-stopped:9' } });
    await db.prisma.$executeRaw`UPDATE "AuditEvent" SET "scope" = 'forged' WHERE "id" = ${tampered.id}`;

    const second = startHub();
    await expect.poll(second.valid).toBe(0);
    // The 20 new events (one page), not the 300 verified before the stop.
    expect(await second.read()).toBe(20);
    await second.stop();
    // It verified up to the event before the forged one, and no further.
    const before = await db.prisma.auditEvent.findFirstOrThrow({ where: { scope: 'while-stopped:8' } });
    expect(await storedThrough()).toBe(before.id);
    // A resumed start is no full pass: the stored one is still the first hub's.
    expect(await lastPass()).toMatchObject({ valid: true, checked: 300 });

    await db.prisma
      .$executeRaw`UPDATE "AuditEvent" SET "scope" = ${tampered.scope} WHERE "id" = ${tampered.id}`;
  });

  it('checks the stored position’s event first: a rewritten tail (hash recomputed) shows with nothing else read', async () => {
    const third = startHub();
    await expect.poll(third.ticked).toBe(11);
    expect(await third.valid()).toBe(1);
    expect(await third.read()).toBe(11);
    await third.stop();

    const last = await db.prisma.auditEvent.findFirstOrThrow({ orderBy: { id: 'desc' } });
    expect(await storedThrough()).toBe(last.id);
    const forged = { ...last, scope: 'forged' };
    await db.prisma.$executeRaw`
      UPDATE "AuditEvent" SET "scope" = ${forged.scope}, "hash" = ${auditHash(last.prevHash!, forged)} WHERE "id" = ${last.id}`;

    const fourth = startHub();
    await expect.poll(fourth.valid).toBe(0);
    expect(await fourth.read()).toBe(0);
    await fourth.stop();

    await db.prisma.$executeRaw`
      UPDATE "AuditEvent" SET "scope" = ${last.scope}, "hash" = ${last.hash} WHERE "id" = ${last.id}`;
  });

  it('starts with a full pass, and records it, when the stored one is over an hour old', async () => {
    const twoHoursAgo = new Date(Date.now() - 2 * 3600_000).toISOString();
    await db.prisma.$executeRaw`UPDATE "AuditFullPass" SET "finishedAt" = ${twoHoursAgo}::timestamp`;
    const stale = (await lastPass()).finishedAt;
    const fifth = startHub();
    await expect.poll(fifth.read).toBe(320);
    await expect.poll(async () => (await lastPass()).finishedAt > stale).toBe(true);
    expect(await fifth.valid()).toBe(1);
    await fifth.stop();
    expect(await lastPass()).toMatchObject({ valid: true, checked: 320 });
  });
});
