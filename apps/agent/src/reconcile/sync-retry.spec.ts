import { describe, expect, it } from 'vitest';
import { DEFAULT_RETRY_POLICY } from '@flotilla/contract';
import { nextRetryAt, retryDelayMs, retryOutlook, effectiveRetryPolicy } from './sync-retry.js';

const at = new Date('2026-12-05T10:00:00.000Z');
const later = (ms: number) => new Date(at.getTime() + ms);

describe('sync retry policy', () => {
  it("waits Argo CD's duration × factor^n, capped at maxDuration", () => {
    expect([0, 1, 2, 3, 4, 5, 6].map((n) => retryDelayMs(DEFAULT_RETRY_POLICY, n))).toEqual([
      5_000, 10_000, 20_000, 40_000, 80_000, 160_000, 180_000,
    ]);
  });

  it('allows limit retries after the first failure, then none', () => {
    const policy = { limit: 2, backoff: { durationMs: 1_000, factor: 3, maxDurationMs: 60_000 } };
    expect(nextRetryAt(policy, 1, at)).toEqual(later(1_000));
    expect(nextRetryAt(policy, 2, at)).toEqual(later(3_000));
    expect(nextRetryAt(policy, 3, at)).toBeNull();
    expect(retryOutlook(policy, 2, at)).toBe('retry 2 of 2 in 3s');
    expect(retryOutlook(policy, 3, at)).toMatch(/^no retry left \(retry limit 2\)/);
  });

  it('retries without end when the limit is -1, and never with limit 0', () => {
    const endless = { limit: -1, backoff: { durationMs: 1_000, factor: 2, maxDurationMs: 4_000 } };
    expect(nextRetryAt(endless, 100, at)).toEqual(later(4_000));
    expect(retryOutlook(endless, 7, at)).toBe('retry 7 in 4s');
    expect(nextRetryAt({ ...endless, limit: 0 }, 1, at)).toBeNull();
  });

  it("uses the target's own policy, else the default", () => {
    const own = { limit: 1, backoff: { durationMs: 1, factor: 1, maxDurationMs: 1 } };
    const base = { automated: true, selfHeal: true, prune: true, allowEmpty: false };
    expect(effectiveRetryPolicy({ ...base, retry: own })).toBe(own);
    expect(effectiveRetryPolicy(base)).toBe(DEFAULT_RETRY_POLICY);
  });
});
