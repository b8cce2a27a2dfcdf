import { describe, expect, it } from 'vitest';
import { HEALTH_ORDER, worstHealth } from './health-result.js';
import { HEALTH_STATUSES } from '@flotilla/contract';

describe('worstHealth', () => {
  it("follows Argo CD's order: Healthy < Suspended < Progressing < Missing < Degraded < Unknown", () => {
    expect(worstHealth(['Healthy', 'Suspended'])).toBe('Suspended');
    expect(worstHealth(['Suspended', 'Progressing', 'Healthy'])).toBe('Progressing');
    expect(worstHealth(['Progressing', 'Missing'])).toBe('Missing');
    expect(worstHealth(['Missing', 'Degraded', 'Healthy'])).toBe('Degraded');
    expect(worstHealth(['Degraded', 'Unknown'])).toBe('Unknown');
  });

  it('is Healthy for nothing to aggregate', () => {
    expect(worstHealth([])).toBe('Healthy');
  });

  it('uses the same vocabulary and order as the wire contract', () => {
    expect([...HEALTH_ORDER]).toEqual([...HEALTH_STATUSES]);
  });
});
