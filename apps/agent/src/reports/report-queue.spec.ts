import { mkdtemp, readdir, rm } from 'node:fs/promises';
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
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'agent-reports-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
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

  it('can send one batch per post and drop the oldest batch alone', async () => {
    const queue = new ReportQueue(dir);
    await queue.init();
    for (const id of ['a', 'b', 'c']) await queue.enqueue([health(id)]);
    const posts: string[][] = [];
    await expect(
      queue.deliver(
        (reports) => {
          posts.push(reports.map((r) => r.id));
          return reports[0]?.id === 'b' ? Promise.reject(new Error('400 bad report')) : Promise.resolve();
        },
        { onePerPost: true },
      ),
    ).rejects.toThrow('400 bad report');
    expect(posts).toEqual([['a'], ['b']]);
    expect((await queue.discardOldest()).map((r) => r.id)).toEqual(['b']);
    expect(queue.dropped).toBe(1);
    const rest: string[] = [];
    await queue.deliver((reports) => {
      rest.push(...reports.map((r) => r.id));
      return Promise.resolve();
    });
    expect(rest).toEqual(['c']);
  });
});
