import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadHubConfig } from '../config/hub-config.js';
import type { Database } from '../db/database.js';
import { HubMetrics } from '../metrics/hub-metrics.service.js';
import { openTwoReplicas, type TwoReplicas } from '../testing/test-database.js';
import { GENESIS_HASH } from './audit-chain.js';
import { AuditArchive, type ArchiveCheckpoint } from './audit-archive.service.js';
import { AuditChainMonitor } from './audit-chain-monitor.service.js';
import { AuditLog } from './audit.service.js';

// Two connection pools on one PostgreSQL database stand for two hub replicas; tampering is done by
// hand in SQL, as someone with database access would.

const lanes = (n: number) => ({ audit: { chainLanes: n } });

describe('audit chain lanes on PostgreSQL (two connection pools)', () => {
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

  const rowsByLane = async () => {
    const rows = await one.prisma.auditEvent.findMany({ orderBy: { id: 'asc' } });
    const byLane = new Map<number, typeof rows>();
    for (const row of rows) byLane.set(row.lane, [...(byLane.get(row.lane) ?? []), row]);
    return byLane;
  };

  it('concurrent writers on two pools fill several lanes, each one unforked chain that verifies', async () => {
    const replicas = [new AuditLog(one, lanes(4)), new AuditLog(two, lanes(4))];
    // Each transaction holds its lane a moment after recording (as a real write does until commit),
    // so the others find it taken and spread over the rest.
    await Promise.all(
      Array.from({ length: 32 }, (_, i) =>
        (i % 2 ? two : one).prisma.$transaction(
          async (tx) => {
            await replicas[i % 2]!.record({ actor: 'user:alice', action: 'write', scope: `w:${i}` }, tx);
            await replicas[i % 2]!.record({ actor: 'user:alice', action: 'write.more', scope: `w:${i}` }, tx);
            await tx.$executeRaw`SELECT pg_sleep(0.02)`;
          },
          { maxWait: 60_000, timeout: 60_000 },
        ),
      ),
    );
    const byLane = await rowsByLane();
    expect([...byLane.values()].flat()).toHaveLength(64);
    expect(byLane.size).toBeGreaterThan(1);
    for (const [lane, chain] of byLane) {
      expect(lane).toBeLessThan(4);
      expect(chain[0]?.prevHash).toBe(GENESIS_HASH);
      for (let i = 1; i < chain.length; i++) expect(chain[i]?.prevHash).toBe(chain[i - 1]?.hash);
      // A transaction's two events are in one lane, one after the other.
      for (const row of chain.filter((r) => r.action === 'write')) {
        const next = chain[chain.indexOf(row) + 1];
        expect(next).toMatchObject({ action: 'write.more', scope: row.scope });
      }
    }
    const result = await replicas[0]!.verify({ full: true });
    expect(result).toMatchObject({ valid: true, checked: 64, unchained: 0 });
    expect(result.lanes?.map((l) => l.lane)).toEqual([...byLane.keys()].sort());
  });

  it('verification walks every lane that has events after the lane count changes, up or down', async () => {
    await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        new AuditLog(one, lanes(8)).record({ actor: 'user:bob', action: 'more', scope: `m:${i}` }),
      ),
    );
    const fewer = new AuditLog(two, lanes(1));
    await fewer.record({ actor: 'user:bob', action: 'one-lane', scope: 'o' });
    const byLane = await rowsByLane();
    expect(byLane.get(0)?.at(-1)?.action).toBe('one-lane');
    const result = await fewer.verify({ full: true });
    expect(result).toMatchObject({ valid: true, checked: [...byLane.values()].flat().length });
    expect(result.lanes?.map((l) => l.lane)).toEqual([...byLane.keys()].sort());
  });

  it('finds a tampered event in one lane, and names that lane; the other lanes still verify', async () => {
    const byLane = await rowsByLane();
    const [lane, chain] = [...byLane].find(([l, c]) => l !== 0 && c.length >= 3)!;
    const edited = chain[1]!;
    await one.prisma.$executeRaw`UPDATE "AuditEvent" SET "scope" = 'forged' WHERE "id" = ${edited.id}`;
    const result = await new AuditLog(one).verify({ full: true });
    expect(result.valid).toBe(false);
    expect(result.firstBrokenAt).toMatchObject({ id: edited.id.toString(), reason: 'hash-mismatch', lane });
    expect(result.lanes?.filter((l) => !l.valid).map((l) => l.lane)).toEqual([lane]);
    expect(result.lanes?.find((l) => l.lane === lane)?.checked).toBe(2);
    await one.prisma.$executeRaw`UPDATE "AuditEvent" SET "scope" = ${edited.scope} WHERE "id" = ${edited.id}`;
    expect((await new AuditLog(one).verify({ full: true })).valid).toBe(true);
  });

  it('an unchained event (hashes nulled by hand) in any lane is a failure', async () => {
    const byLane = await rowsByLane();
    const [lane, chain] = [...byLane].find(([l, c]) => l !== 0 && c.length >= 2)!;
    const nulled = chain.at(-1)!;
    await one.prisma
      .$executeRaw`UPDATE "AuditEvent" SET "hash" = NULL, "prevHash" = NULL WHERE "id" = ${nulled.id}`;
    const result = await new AuditLog(one).verify({ full: true });
    expect(result).toMatchObject({
      valid: false,
      unchained: 1,
      firstBrokenAt: { id: nulled.id.toString(), reason: 'unchained', lane },
    });
    await one.prisma
      .$executeRaw`UPDATE "AuditEvent" SET "hash" = ${nulled.hash}, "prevHash" = ${nulled.prevHash} WHERE "id" = ${nulled.id}`;
    expect((await new AuditLog(one).verify({ full: true })).valid).toBe(true);
  });

  it('the chain monitor checks an event that commits after a higher id in another lane was verified', async () => {
    const config = loadHubConfig({ FLOTILLA_DEV_MODE: '1' });
    const monitor = new AuditChainMonitor(one, new HubMetrics(one), config);
    const audit = new AuditLog(one, lanes(4));
    expect(await monitor.verifyNew()).toBe(true);
    let commit!: () => void;
    const held = new Promise<void>((resolve) => (commit = resolve));
    let recorded!: () => void;
    const inserted = new Promise<void>((resolve) => (recorded = resolve));
    // A takes its id first and commits last; B, in another lane, commits in between.
    const slow = one.prisma.$transaction(
      async (tx) => {
        await audit.record({ actor: 'user:slow', action: 'late', scope: 'a' }, tx);
        recorded();
        await held;
      },
      { timeout: 60_000 },
    );
    await inserted;
    await new AuditLog(two, lanes(4)).record({ actor: 'user:fast', action: 'early', scope: 'b' });
    expect(await monitor.verifyNew()).toBe(true);
    commit();
    await slow;
    const late = await one.prisma.auditEvent.findFirstOrThrow({ where: { actor: 'user:slow' } });
    const early = await one.prisma.auditEvent.findFirstOrThrow({ where: { actor: 'user:fast' } });
    expect(late.id).toBeLessThan(early.id);
    expect(late.lane).not.toBe(early.lane);
    // Edited before the monitor ever saw it: a single "verified through" id would skip it for good.
    await one.prisma.$executeRaw`UPDATE "AuditEvent" SET "scope" = 'forged' WHERE "id" = ${late.id}`;
    expect(await monitor.verifyNew()).toBe(false);
    await one.prisma.$executeRaw`UPDATE "AuditEvent" SET "scope" = ${late.scope} WHERE "id" = ${late.id}`;
  });

  it('archives and prunes several lanes at one cut; every lane still verifies across it', async () => {
    const audit = new AuditLog(one, lanes(4));
    const archive = new AuditArchive(one, audit);
    // Three transactions that each hold their lane until all three recorded: three lanes for sure.
    const inLanes = async (tag: string) => {
      let arrived = 0;
      let release!: () => void;
      const all = new Promise<void>((resolve) => (release = resolve));
      await Promise.all(
        [0, 1, 2].map((i) =>
          one.prisma.$transaction(
            async (tx) => {
              await audit.record({ actor: 'user:arc', action: tag, scope: `${tag}:${i}` }, tx);
              if (++arrived === 3) release();
              await all;
              await audit.record({ actor: 'user:arc', action: tag, scope: `${tag}:${i}:b` }, tx);
            },
            { maxWait: 30_000, timeout: 60_000 },
          ),
        ),
      );
    };
    await inLanes('old');
    await new Promise((resolve) => setTimeout(resolve, 5));
    const cut = new Date();
    await new Promise((resolve) => setTimeout(resolve, 5));
    await inLanes('new');

    const range = await archive.range(cut);
    const lines: string[] = [];
    for await (const line of archive.lines(range)) lines.push(line);
    const { checkpoint } = JSON.parse(lines.at(-1)!) as { checkpoint: ArchiveCheckpoint };
    const total = await one.prisma.auditEvent.count({ where: { at: { lt: cut } } });
    expect(checkpoint.events).toBe(total);
    expect(lines).toHaveLength(total + 1);
    expect(checkpoint.lanes!.length).toBeGreaterThanOrEqual(3);
    expect(checkpoint.lanes!.reduce((n, l) => n + l.events, 0)).toBe(total);

    // A checkpoint naming lane 0 alone (as before lanes) is not this archive.
    await expect(
      archive.prune(
        { throughId: checkpoint.throughId, hash: checkpoint.hash, sha256: checkpoint.sha256 },
        'user:arc',
      ),
    ).rejects.toMatchObject({ code: 'archive-mismatch' });

    const pruned = await archive.prune(checkpoint, 'user:arc');
    expect(pruned.pruned).toBe(total);
    expect(pruned.checkpoint.lanes?.map((l) => l.lane)).toEqual(checkpoint.lanes!.map((l) => l.lane));
    expect(await one.prisma.auditEvent.count({ where: { at: { lt: cut } } })).toBe(0);
    expect(await one.prisma.auditCheckpoint.count()).toBe(checkpoint.lanes!.length);
    expect(await audit.verify({ full: true })).toMatchObject({ valid: true, checked: 7, unchained: 0 });

    // The first event after the cut in a lane that was cut must link to that lane's checkpoint. Each batch took
    // three of the four lanes, so at least two were used on both sides of the cut; take one other than lane 0.
    const after = await one.prisma.auditEvent.findMany({
      where: { at: { gte: cut } },
      orderBy: { id: 'asc' },
    });
    const cutLane = checkpoint.lanes!.find((l) => l.lane !== 0 && after.some((e) => e.lane === l.lane))!;
    const next = after.find((e) => e.lane === cutLane.lane)!;
    expect(next.prevHash).toBe(cutLane.hash);
    await one.prisma.$executeRaw`UPDATE "AuditEvent" SET "scope" = 'forged' WHERE "id" = ${next.id}`;
    expect(await audit.verify({ full: true })).toMatchObject({
      valid: false,
      firstBrokenAt: { id: next.id.toString(), lane: cutLane.lane, reason: 'hash-mismatch' },
    });
  });
});
