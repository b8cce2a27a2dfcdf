import { describe, expect, it } from 'vitest';
import { Backoff } from './backoff.js';

describe('Backoff', () => {
  it('doubles from the initial delay up to the cap', () => {
    const b = new Backoff({ initialMs: 1_000, maxMs: 5_000, jitter: 0 });
    expect([b.next(), b.next(), b.next(), b.next(), b.next()]).toEqual([1_000, 2_000, 4_000, 5_000, 5_000]);
    b.reset();
    expect(b.next()).toBe(1_000);
  });

  it('jitters downwards only, so the cap holds', () => {
    const low = new Backoff({ initialMs: 1_000, maxMs: 60_000, jitter: 0.5 }, () => 1);
    const high = new Backoff({ initialMs: 1_000, maxMs: 60_000, jitter: 0.5 }, () => 0);
    expect([low.next(), low.next()]).toEqual([500, 1_000]);
    expect([high.next(), high.next()]).toEqual([1_000, 2_000]);
  });
});
