import { describe, expect, it } from 'vitest';
import { TickBatcher } from './tick-batcher.js';

/** A batcher that doubles numbers and records every batch it was given. */
function doubling(tickMs = 5, maxBatchSize = 100) {
  const batches: number[][] = [];
  const batcher = new TickBatcher<number, number>(
    (keys) => {
      batches.push([...keys]);
      return Promise.resolve(keys.map((k) => k * 2));
    },
    { tickMs, maxBatchSize },
  );
  return { batcher, batches };
}

describe('TickBatcher', () => {
  it('answers the keys asked within one tick with one read, each caller its own value', async () => {
    const { batcher, batches } = doubling();
    const answers = await Promise.all([3, 1, 2].map((k) => batcher.load(k)));
    expect(answers).toEqual([6, 2, 4]);
    expect(batches).toEqual([[3, 1, 2]]);
  });

  it('gives the read the keys in the order they were asked, duplicates included', async () => {
    const { batcher, batches } = doubling();
    const answers = await Promise.all([5, 4, 5].map((k) => batcher.load(k)));
    expect(answers).toEqual([10, 8, 10]);
    expect(batches).toEqual([[5, 4, 5]]);
  });

  it('reads again for a key asked after its batch was read (nothing is remembered)', async () => {
    const { batcher, batches } = doubling();
    expect(await batcher.load(1)).toBe(2);
    expect(await batcher.load(1)).toBe(2);
    expect(batches).toEqual([[1], [1]]);
  });

  it('splits a burst larger than maxBatchSize into reads of at most that many, in order', async () => {
    const { batcher, batches } = doubling(5, 2);
    expect(await Promise.all([1, 2, 3, 4, 5].map((k) => batcher.load(k)))).toEqual([2, 4, 6, 8, 10]);
    expect(batches).toEqual([[1, 2], [3, 4], [5]]);
  });

  it('fails every caller of a batch whose read fails, with its error, and reads again afterwards', async () => {
    let calls = 0;
    const batcher = new TickBatcher<string, string>(
      (keys) => (++calls === 1 ? Promise.reject(new Error('connection lost')) : Promise.resolve([...keys])),
      { tickMs: 5, maxBatchSize: 10 },
    );
    const failed = await Promise.allSettled(['a', 'b'].map((k) => batcher.load(k)));
    expect(failed.map((r) => (r.status === 'rejected' ? (r.reason as Error).message : r.value))).toEqual([
      'connection lost',
      'connection lost',
    ]);
    expect(await batcher.load('c')).toBe('c');
  });

  it('fails only the caller whose key the read answered with an Error', async () => {
    const batcher = new TickBatcher<string, string>(
      (keys) => Promise.resolve(keys.map((k) => (k === 'bad' ? new Error(`no ${k}`) : k.toUpperCase()))),
      { tickMs: 5, maxBatchSize: 10 },
    );
    const settled = await Promise.allSettled(['ok', 'bad', 'fine'].map((k) => batcher.load(k)));
    expect(settled.map((r) => (r.status === 'rejected' ? (r.reason as Error).message : r.value))).toEqual([
      'OK',
      'no bad',
      'FINE',
    ]);
  });

  it('refuses options that could never dispatch a batch', () => {
    const read = (keys: readonly number[]) => Promise.resolve([...keys]);
    expect(() => new TickBatcher(read, { tickMs: -1, maxBatchSize: 1 })).toThrow('tickMs');
    expect(() => new TickBatcher(read, { tickMs: 0, maxBatchSize: 0 })).toThrow('maxBatchSize');
  });
});
