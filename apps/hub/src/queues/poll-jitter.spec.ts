import { describe, expect, it } from 'vitest';
import { pollOffsetMs } from './poll-jitter.js';

describe('pollOffsetMs', () => {
  it('is stable per repository and inside the interval', () => {
    expect(pollOffsetMs('repo-a', 30_000)).toBe(pollOffsetMs('repo-a', 30_000));
    for (let i = 0; i < 200; i++) {
      const o = pollOffsetMs(`repo-${i}`, 30_000);
      expect(o).toBeGreaterThanOrEqual(1);
      expect(o).toBeLessThan(30_000);
    }
  });

  it('spreads repositories over the interval instead of one instant', () => {
    const buckets = new Array<number>(10).fill(0);
    for (let i = 0; i < 1000; i++) buckets[Math.floor(pollOffsetMs(`repo-${i}`, 30_000) / 3000)]! += 1;
    // 1,000 repositories over 10 tenths of the interval: none empty, none holding a quarter.
    expect(Math.min(...buckets)).toBeGreaterThan(50);
    expect(Math.max(...buckets)).toBeLessThan(250);
  });
});
