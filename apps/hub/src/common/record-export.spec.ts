import { describe, expect, it } from 'vitest';
import { everyItem, exportLines } from './record-export.js';

/** A keyset-paged source of 1..n, newest first, as the history and audit queries page. */
function pages(n: number) {
  const calls: { cursor: string | undefined; limit: number }[] = [];
  const page = (cursor: string | undefined, limit: number) => {
    calls.push({ cursor, limit });
    const start = cursor === undefined ? n : Number(cursor) - 1;
    const items = Array.from({ length: Math.max(0, Math.min(limit, start)) }, (_, i) => start - i);
    const last = items.at(-1);
    return Promise.resolve({ items, nextCursor: last !== undefined && last > 1 ? String(last) : null });
  };
  return { page, calls };
}

const all = async <T>(it: AsyncIterable<T>) => {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
};

describe('everyItem', () => {
  it('follows the cursors to the end, 500 at a time, skipping and repeating nothing', async () => {
    const src = pages(1201);
    const items = await all(everyItem(src.page));
    expect(items).toEqual(Array.from({ length: 1201 }, (_, i) => 1201 - i));
    expect(src.calls.map((c) => c.limit)).toEqual([500, 500, 500]);
  });

  it('stops at the limit, asking for no more than it needs, and starts at a given cursor', async () => {
    const src = pages(1201);
    expect(await all(everyItem(src.page, { limit: 502 }))).toHaveLength(502);
    expect(src.calls.map((c) => c.limit)).toEqual([500, 2]);
    expect(await all(everyItem(pages(10).page, { cursor: '4' }))).toEqual([3, 2, 1]);
  });
});

describe('exportLines', () => {
  it('writes a CSV header and a row per item, or one JSON object a line', async () => {
    const csv = { header: 'n\r\n', row: (n: number) => `${n}\r\n` };
    expect(await all(exportLines([2, 1], 'csv', csv))).toEqual(['n\r\n', '2\r\n', '1\r\n']);
    expect(await all(exportLines([{ a: 1 }], 'ndjson', { header: '', row: () => '' }))).toEqual([
      '{"a":1}\n',
    ]);
  });
});
