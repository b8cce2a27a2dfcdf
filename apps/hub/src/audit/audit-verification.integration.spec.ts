import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { loadHubConfig } from '../config/hub-config.js';
import type { Database } from '../db/database.js';
import { HubMetrics } from '../metrics/hub-metrics.service.js';
import { openTwoReplicas, type TwoReplicas } from '../testing/test-database.js';
import { auditHash } from './audit-chain.js';
import { AuditChainMonitor } from './audit-chain-monitor.service.js';
import { verifyChain } from './audit-verification.js';
import { AuditLog } from './audit.service.js';

// Incremental verification on real PostgreSQL; two connection pools stand for two hub replicas, and
// tampering is done by hand in SQL, as someone with database access would.

const lanes = (n: number) => ({ audit: { chainLanes: n } });

describe('incremental audit verification (PostgreSQL)', () => {
  let replicas: TwoReplicas | undefined;
  let one: Database;
  let two: Database;
  let audit: AuditLog;

  beforeAll(async () => {
    replicas = await openTwoReplicas();
    ({ one, two } = replicas);
    audit = new AuditLog(one, lanes(3));
  }, 120_000);

  afterAll(async () => {
    await replicas?.close();
  });

  afterEach(() => vi.restoreAllMocks());

  const write = async (n: number, tag: string) => {
    for (let i = 0; i < n; i++) await audit.record({ actor: 'user:ann', action: tag, scope: `${tag}:${i}` });
  };
  const stored = async () =>
    new Map((await one.prisma.auditChainVerified.findMany()).map((p) => [p.lane, p.throughId]));
  const lastOfEachLane = async () => {
    const rows = await one.prisma.auditEvent.findMany({ orderBy: { id: 'asc' } });
    return new Map(rows.map((r) => [r.lane, r.id]));
  };

  it('checks only the events after each lane’s stored position, and stores where it got', async () => {
    await write(5, 'first');
    expect(await audit.verify()).toMatchObject({
      valid: true,
      checked: 5,
      mode: 'incremental',
      complete: true,
    });
    expect(await stored()).toEqual(await lastOfEachLane());

    await write(3, 'second');
    const next = await audit.verify();
    expect(next).toMatchObject({ valid: true, checked: 3, unchained: 0 });
    const again = await audit.verify();
    expect(again).toMatchObject({ valid: true, checked: 0 });
    // Each lane reports where it started and where it is now verified through.
    for (const lane of again.lanes!) expect(lane.fromId).toBe(lane.throughId);
    expect(await stored()).toEqual(await lastOfEachLane());
  });

  it('reads at most its budget per call and says so; the next call goes on', async () => {
    await write(5, 'budget');
    const partial = await verifyChain(one.prisma, { full: false, budget: 3 });
    expect(partial).toMatchObject({ valid: true, checked: 3, complete: false });
    expect(partial.lanes!.some((l) => l.caughtUp === false)).toBe(true);
    expect(await verifyChain(one.prisma, { full: false, budget: 3 })).toMatchObject({
      valid: true,
      checked: 2,
      complete: true,
    });
  });

  it('fails on a tampered new event, and keeps failing until it is put back', async () => {
    await write(2, 'new');
    const row = await one.prisma.auditEvent.findFirstOrThrow({ where: { scope: 'new:1' } });
    await one.prisma.$executeRaw`UPDATE "AuditEvent" SET "scope" = 'forged' WHERE "id" = ${row.id}`;
    for (let i = 0; i < 2; i++) {
      expect(await audit.verify()).toMatchObject({
        valid: false,
        firstBrokenAt: { id: row.id.toString(), reason: 'hash-mismatch', lane: row.lane },
      });
    }
    await one.prisma.$executeRaw`UPDATE "AuditEvent" SET "scope" = 'new:1' WHERE "id" = ${row.id}`;
    expect(await audit.verify()).toMatchObject({ valid: true, checked: 1 });
  });

  it('an edit to an already verified event: full mode and the monitor’s full pass catch it, and later incremental calls report it', async () => {
    const config = loadHubConfig({ FLOTILLA_DEV_MODE: '1' });
    const monitor = new AuditChainMonitor(one, new HubMetrics(one), config);
    expect(await monitor.verifyNew()).toBe(true);
    expect(await audit.verify()).toMatchObject({ valid: true, checked: 0 });

    const old = await one.prisma.auditEvent.findFirstOrThrow({ where: { scope: 'first:0' } });
    await one.prisma
      .$executeRaw`UPDATE "AuditEvent" SET "details" = '{"forged":true}' WHERE "id" = ${old.id}`;
    // Between full passes an incremental check reads only new events: the old row is not reread.
    expect(await audit.verify()).toMatchObject({ valid: true, checked: 0 });
    expect(await monitor.verifyNew()).toBe(true);
    // The monitor's hourly pass starts over from each lane's start.
    const now = Date.now();
    vi.spyOn(Date, 'now').mockReturnValue(now + 61 * 60_000);
    const caught = await monitor.verifyNew();
    vi.restoreAllMocks();
    expect(caught).toBe(false);
    const breakAtOld = { id: old.id.toString(), reason: 'hash-mismatch', lane: old.lane };
    // Its result is the last full pass, which the incremental answer carries.
    expect(await audit.verify()).toMatchObject({
      valid: false,
      checked: 0,
      firstBrokenAt: breakAtOld,
      lastFullPass: { valid: false, firstBrokenAt: breakAtOld },
    });
    expect(await audit.verify({ full: true })).toMatchObject({
      valid: false,
      mode: 'full',
      firstBrokenAt: breakAtOld,
    });

    await one.prisma
      .$executeRaw`UPDATE "AuditEvent" SET "details" = ${JSON.stringify(old.details)}::jsonb WHERE "id" = ${old.id}`;
    const full = await audit.verify({ full: true });
    expect(full).toMatchObject({ valid: true, lastFullPass: { valid: true } });
    expect(full.checked).toBe(await one.prisma.auditEvent.count());
    expect(await audit.verify()).toMatchObject({ valid: true, checked: 0, lastFullPass: { valid: true } });
  });

  it('a rewritten tail (content and hash recomputed) and a deleted tail both show, though the chain still links', async () => {
    await write(2, 'tail');
    expect((await audit.verify()).valid).toBe(true);
    const last = await one.prisma.auditEvent.findFirstOrThrow({ where: { scope: 'tail:1' } });
    const forged = { ...last, scope: 'tail:forged' };
    const hash = auditHash(last.prevHash!, forged);
    await one.prisma
      .$executeRaw`UPDATE "AuditEvent" SET "scope" = ${forged.scope}, "hash" = ${hash} WHERE "id" = ${last.id}`;
    const rewritten = { id: last.id.toString(), reason: 'hash-mismatch', lane: last.lane };
    expect(await audit.verify()).toMatchObject({ valid: false, firstBrokenAt: rewritten });
    expect(await audit.verify({ full: true })).toMatchObject({ valid: false, firstBrokenAt: rewritten });

    await one.prisma.$executeRaw`DELETE FROM "AuditEvent" WHERE "id" = ${last.id}`;
    const gone = await audit.verify();
    expect(gone).toMatchObject({
      valid: false,
      firstBrokenAt: { id: last.id.toString(), reason: 'broken-link' },
    });
    expect(gone.firstBrokenAt?.message).toContain('is gone');
    expect(await audit.verify({ full: true })).toMatchObject({
      valid: false,
      firstBrokenAt: { id: last.id.toString(), reason: 'broken-link' },
    });

    await one.prisma.$executeRaw`
      INSERT INTO "AuditEvent" ("id", "at", "actor", "action", "scope", "details", "prevHash", "hash", "lane")
      VALUES (${last.id}, ${last.at.toISOString()}::timestamp, ${last.actor}, ${last.action}, ${last.scope},
              ${JSON.stringify(last.details)}::jsonb, ${last.prevHash}, ${last.hash}, ${last.lane}::smallint)`;
    expect((await audit.verify({ full: true })).valid).toBe(true);
    expect((await audit.verify()).valid).toBe(true);
  });

  it('two replicas verifying at once, while events are written, stay consistent: positions only move forward', async () => {
    const replicas = [new AuditLog(one, lanes(3)), new AuditLog(two, lanes(3))];
    const before = await one.prisma.auditEvent.count();
    const writes = Array.from({ length: 30 }, (_, i) =>
      replicas[i % 2]!.record({ actor: 'user:bo', action: 'busy', scope: `busy:${i}` }),
    );
    const checks = Array.from({ length: 6 }, (_, i) => replicas[i % 2]!.verify());
    await Promise.all(writes);
    for (const result of await Promise.all(checks)) expect(result.valid).toBe(true);
    // Whatever each call covered, the positions end at each lane's last event once one more call runs.
    const [a, b] = await Promise.all(replicas.map((r) => r.verify()));
    expect(a!.valid && b!.valid).toBe(true);
    expect(await stored()).toEqual(await lastOfEachLane());
    expect(await replicas[0]!.verify()).toMatchObject({ valid: true, checked: 0 });
    const full = await replicas[1]!.verify({ full: true });
    expect(full).toMatchObject({ valid: true, checked: before + 30 });
  });
});
