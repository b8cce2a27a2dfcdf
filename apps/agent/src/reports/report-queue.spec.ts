import { mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type Report } from '@flotilla/contract';
import { ReportQueue } from './report-queue.js';

const health = (id: string): Report => ({
  type: 'health',
  id,
  targetId: 't1',
  at: '2026-12-02T10:00:00.000Z',
  status: 'Healthy',
  message: '',
  resources: [],
});

describe('ReportQueue', () => {
  let dir: string;
  let aside: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'agent-reports-'));
    aside = `${dir}-refused`;
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
    await rm(aside, { recursive: true, force: true });
  });

  it('delivers in the order enqueued, several batches per post, and empties the disk', async () => {
    const queue = new ReportQueue(dir, { maxReportsPerPost: 3 });
    await queue.init();
    // Not awaited one by one: order must still follow call order.
    await Promise.all([
      queue.enqueue([health('a'), health('b')]),
      queue.enqueue([health('c')]),
      queue.enqueue([health('d')]),
    ]);
    const posts: string[][] = [];
    const delivered = await queue.deliver((reports) => {
      posts.push(reports.map((r) => r.id));
      return Promise.resolve();
    });
    expect(delivered).toBe(4);
    expect(posts).toEqual([['a', 'b', 'c'], ['d']]);
    expect(queue.pendingBatches).toBe(0);
    expect(await readdir(dir)).toEqual([]);
  });

  it('writes the batches queued while a write is in flight together, in order, each resolved once on disk', async () => {
    const queue = new ReportQueue(dir);
    await queue.init();
    const onDisk = async (): Promise<string[]> => {
      const ids: string[] = [];
      for (const name of (await readdir(dir)).filter((n) => n.endsWith('.json')).sort()) {
        const batch = JSON.parse(await readFile(join(dir, name), 'utf8')) as { reports: Report[] };
        ids.push(...batch.reports.map((r) => r.id));
      }
      return ids;
    };
    const first = queue.enqueue([health('a')]);
    // Queued after the first write started (a macrotask later), before it ended.
    await new Promise((resolve) => setImmediate(resolve));
    const seen: string[][] = [];
    const later = ['b', 'c', 'd'].map((id) =>
      queue.enqueue([health(id)]).then(async () => seen.push(await onDisk())),
    );
    await first;
    await Promise.all(later);
    // Each caller found its own report on disk when its promise resolved.
    for (const ids of seen) expect(ids).toEqual(['a', 'b', 'c', 'd']);
    // a alone, then b, c and d in one file: one write (one fsync) for the three.
    expect(queue.pendingBatches).toBe(2);
    const posts: string[][] = [];
    await queue.deliver(
      (reports) => {
        posts.push(reports.map((r) => r.id));
        return Promise.resolve();
      },
      { onePerPost: true },
    );
    expect(posts).toEqual([['a'], ['b', 'c', 'd']]);
  });

  it('tells every caller of a group whose write failed, and writes the next group anew', async () => {
    const queue = new ReportQueue(dir);
    await queue.init();
    // No directory to write into: the first write fails, and so does the group queued behind it.
    await rm(dir, { recursive: true, force: true });
    const first = queue.enqueue([health('a')]);
    await new Promise((resolve) => setImmediate(resolve));
    const group = [queue.enqueue([health('b')]), queue.enqueue([health('c')])];
    const outcomes = await Promise.allSettled([first, ...group]);
    expect(outcomes.map((o) => o.status)).toEqual(['rejected', 'rejected', 'rejected']);
    expect(queue.pendingBatches).toBe(0);
    await mkdir(dir, { recursive: true });
    await queue.enqueue([health('d')]);
    const posts: string[][] = [];
    await queue.deliver((reports) => {
      posts.push(reports.map((r) => r.id));
      return Promise.resolve();
    });
    expect(posts).toEqual([['d']]);
  });

  it('keeps a batch the hub did not acknowledge and resends it after a restart', async () => {
    const first = new ReportQueue(dir);
    await first.init();
    await first.enqueue([health('a')]);
    await first.enqueue([health('b')]);
    await expect(first.deliver(() => Promise.reject(new Error('hub unreachable')))).rejects.toThrow(
      'hub unreachable',
    );
    expect(first.pendingBatches).toBe(2);

    const second = new ReportQueue(dir);
    await second.init();
    await second.enqueue([health('c')]);
    const seen: string[] = [];
    await second.deliver((reports) => {
      seen.push(...reports.map((r) => r.id));
      return Promise.resolve();
    });
    expect(seen).toEqual(['a', 'b', 'c']);
  });

  it('drops the oldest batches beyond its bound and counts them', async () => {
    const queue = new ReportQueue(dir, { maxBatches: 2 });
    await queue.init();
    for (const id of ['a', 'b', 'c']) await queue.enqueue([health(id)]);
    expect(queue.pendingBatches).toBe(2);
    expect(queue.dropped).toBe(1);
    const seen: string[] = [];
    await queue.deliver((reports) => {
      seen.push(...reports.map((r) => r.id));
      return Promise.resolve();
    });
    expect(seen).toEqual(['b', 'c']);
  });

  it('splits a batch larger than one post', async () => {
    const queue = new ReportQueue(dir, { maxReportsPerPost: 2 });
    await queue.init();
    await queue.enqueue(['a', 'b', 'c', 'd', 'e'].map(health));
    expect(queue.pendingBatches).toBe(3);
  });

  it('can send one batch per post, stopping at the first failure', async () => {
    const queue = new ReportQueue(dir);
    await queue.init();
    for (const id of ['a', 'b', 'c']) await queue.enqueue([health(id)]);
    const posts: string[][] = [];
    await expect(
      queue.deliver(
        (reports) => {
          posts.push(reports.map((r) => r.id));
          return reports[0]?.id === 'b'
            ? Promise.reject(new Error('413 from an ingress'))
            : Promise.resolve();
        },
        { onePerPost: true },
      ),
    ).rejects.toThrow('413 from an ingress');
    expect(posts).toEqual([['a'], ['b']]);
    expect(queue.pendingBatches).toBe(2);
  });

  it('sets aside, beside the queue, the reports a 200 lists as refused; the rest is delivered (#14 defect 6)', async () => {
    const queue = new ReportQueue(dir, { setAsideDir: aside });
    await queue.init();
    await queue.enqueue([health('a'), health('b'), health('c')]);
    const result = await queue.deliverReporting((reports) =>
      Promise.resolve([
        { index: 1, id: reports[1]?.id ?? '', code: 'invalid-text', message: 'report 1 refused' },
      ]),
    );
    expect(result.delivered).toBe(3);
    expect(result.setAside.map((s) => [s.reportIds, s.code])).toEqual([[['b'], 'invalid-text']]);
    expect(queue.pendingBatches).toBe(0);
    expect(queue.setAsideFiles).toBe(1);
    const [file] = await readdir(aside);
    const kept = JSON.parse(await readFile(join(aside, file ?? ''), 'utf8')) as Record<string, unknown>;
    expect(kept).toMatchObject({ code: 'invalid-text', message: 'report 1 refused', reports: [{ id: 'b' }] });
    // A restarted agent still counts what is waiting for an operator.
    const again = new ReportQueue(dir, { setAsideDir: aside });
    await again.init();
    expect(again.setAsideFiles).toBe(1);
  });

  it('isolates a refused batch report by report: only the invalid one is set aside', async () => {
    const queue = new ReportQueue(dir, { setAsideDir: aside });
    await queue.init();
    await queue.enqueue([health('a'), health('b'), health('c')]);
    await queue.enqueue([health('d')]);
    const invalid = (err: unknown) =>
      err instanceof Error && err.message === 'invalid'
        ? { code: 'reports-invalid', message: 'bad' }
        : undefined;

    // Any other failure on the way keeps the batch whole (a replay is harmless: ids deduplicate).
    await expect(
      queue.isolateOldest(
        (r) => (r.id === 'b' ? Promise.reject(new Error('503')) : Promise.resolve()),
        invalid,
      ),
    ).rejects.toThrow('503');
    expect(queue.pendingBatches).toBe(2);
    expect(await readdir(aside)).toEqual([]);

    const sent: string[] = [];
    const setAside = await queue.isolateOldest((r) => {
      if (r.id === 'b') return Promise.reject(new Error('invalid'));
      sent.push(r.id);
      return Promise.resolve();
    }, invalid);
    expect(sent).toEqual(['a', 'c']);
    expect(setAside.map((s) => [s.reportIds, s.code])).toEqual([[['b'], 'reports-invalid']]);
    expect(queue.pendingBatches).toBe(1);
    expect(await readdir(aside)).toHaveLength(1);
  });

  it('sets aside a queued file that no longer parses instead of deleting it', async () => {
    const queue = new ReportQueue(dir, { setAsideDir: aside });
    await queue.init();
    await queue.enqueue([health('a')]);
    await queue.enqueue([health('b')]);
    const [first] = (await readdir(dir)).sort();
    await writeFile(join(dir, first ?? ''), '{"reports": [trunc');
    const seen: string[] = [];
    const result = await queue.deliverReporting((reports) => {
      seen.push(...reports.map((r) => r.id));
      return Promise.resolve();
    });
    expect(seen).toEqual(['b']);
    expect(result.setAside.map((s) => s.code)).toEqual(['unreadable-batch']);
    const [file] = await readdir(aside);
    expect(JSON.parse(await readFile(join(aside, file ?? ''), 'utf8'))).toMatchObject({
      raw: '{"reports": [trunc',
    });
  });
});
