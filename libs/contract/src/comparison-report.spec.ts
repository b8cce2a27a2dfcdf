import { describe, expect, it } from 'vitest';
import { COMPARISON_LIMITS, reportBatchSchema } from './agent-protocol.js';

const base = {
  type: 'comparison',
  id: 'c-1',
  targetId: 't-1',
  at: '2026-12-07T03:00:00.000Z',
  revision: 'a1b2c3',
  bundleDigest: `sha256:${'0'.repeat(64)}`,
  inSync: false,
  compared: 2,
};
const object = (diff: string, name = 'web') => ({
  group: 'apps',
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  namespace: 'shop',
  name,
  action: 'change',
  paths: ['/spec/template/spec/containers/0/image'],
  diff,
});

/** The path of each issue zod finds, as the hub names it in a refusal. */
function issuePaths(batch: unknown): string[] {
  const parsed = reportBatchSchema.safeParse(batch);
  return parsed.success ? [] : parsed.error.issues.map((i) => i.path.join('.'));
}

describe('comparison report', () => {
  it('parses within the limits, with the defaults filled in', () => {
    const parsed = reportBatchSchema.parse({ reports: [{ ...base, objects: [object('-a\n+b\n')] }] });
    expect(parsed.reports[0]).toMatchObject({ type: 'comparison', truncated: false });
    expect(parsed.reports[0]?.type === 'comparison' && parsed.reports[0].objects[0]?.truncated).toBe(false);
  });

  it('refuses one diff over its limit, naming the field', () => {
    const tooLong = 'x'.repeat(COMPARISON_LIMITS.diffBytes + 1);
    expect(issuePaths({ reports: [{ ...base, objects: [object(tooLong)] }] })).toEqual([
      'reports.0.objects.0.diff',
    ]);
    // The limit is in bytes: 8,193 two-byte characters are over it.
    expect(issuePaths({ reports: [{ ...base, objects: [object('é'.repeat(8193))] }] })).toEqual([
      'reports.0.objects.0.diff',
    ]);
  });

  it('refuses more objects, or more diff in all, than the limits allow', () => {
    const many = Array.from({ length: COMPARISON_LIMITS.objects + 1 }, (_, i) => object('', `o-${i}`));
    expect(issuePaths({ reports: [{ ...base, objects: many }] })).toEqual(['reports.0.objects']);
    const full = 'x'.repeat(COMPARISON_LIMITS.diffBytes);
    const heavy = Array.from({ length: 17 }, (_, i) => object(full, `o-${i}`));
    expect(issuePaths({ reports: [{ ...base, objects: heavy }] })).toEqual(['reports.0.objects']);
  });

  it('leaves the batches of agents that send no comparison as they were', () => {
    const older = {
      reports: [
        { type: 'health', id: 'h-1', targetId: 't-1', at: base.at, status: 'Healthy' },
        {
          type: 'drift',
          id: 'd-1',
          targetId: 't-1',
          at: base.at,
          state: 'detected',
          resource: { group: '', kind: 'Service', name: 'web' },
        },
      ],
    };
    expect(reportBatchSchema.parse(older).reports.map((r) => r.type)).toEqual(['health', 'drift']);
  });
});
