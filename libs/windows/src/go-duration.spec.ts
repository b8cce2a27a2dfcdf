import { describe, expect, it } from 'vitest';
import { parseGoDuration } from './go-duration.js';

describe('parseGoDuration (Go time.ParseDuration)', () => {
  const good: [string, number][] = [
    ['1h30m', 5_400_000],
    ['30m', 1_800_000],
    ['2h', 7_200_000],
    ['1.5h', 5_400_000],
    ['90s', 90_000],
    ['300ms', 300],
    ['1h0m0s', 3_600_000],
    ['0', 0],
    ['-1h', -3_600_000],
    ['+5m', 300_000],
    ['.5m', 30_000],
    ['1.m', 60_000],
    ['1500us', 1.5],
    ['2µs', 0.002],
    ['10ns', 0.00001],
  ];
  for (const [text, ms] of good) {
    it(`reads ${text}`, () => expect(parseGoDuration(text)).toBeCloseTo(ms, 9));
  }

  for (const text of ['', '1', '1d', '33mm', '1000days', 'h', '.h', '1h 30m', '-', '1e3s', '3000000h']) {
    it(`rejects '${text}'`, () => expect(() => parseGoDuration(text)).toThrow(/invalid duration/));
  }
});
