import { describe, expect, it } from 'vitest';
import { figure, flatness, percentile, summarize, targetValue } from './stats.js';

describe('summarize', () => {
  it('takes nearest-rank percentiles: with fewer than 100 runs the p99 is the worst run', () => {
    const s = summarize([30, 10, 20, 50, 40]);
    expect(s.runs).toBe(5);
    expect(s.median).toBe(30);
    expect(s.p99).toBe(50);
    expect(s.min).toBe(10);
    expect(s.max).toBe(50);
  });

  it('puts the p99 of 200 runs on rank 198', () => {
    const sorted = Array.from({ length: 200 }, (_, i) => i + 1);
    expect(percentile(sorted, 99)).toBe(198);
    expect(percentile(sorted, 50)).toBe(100);
  });

  it('refuses no samples', () => {
    expect(() => summarize([])).toThrow('percentile of no samples');
  });
});

describe('figure', () => {
  const base = { id: 'x', bench: 'b', title: 't', unit: 'ms', fleetSize: 1, command: 'c' };

  it('judges the named statistic against the target', () => {
    const target = { on: 'p99' as const, op: '<' as const, value: 1000, text: 'p99 < 1 s' };
    expect(figure({ ...base, samples: [100, 200, 999], target }).verdict).toBe('met');
    expect(figure({ ...base, samples: [100, 200, 1000], target }).verdict).toBe('missed');
    expect(figure({ ...base, samples: [1] }).verdict).toBe('no target');
  });

  it('judges a p95 target on the 95th percentile, not the worst run', () => {
    const target = { on: 'p95' as const, op: '<' as const, value: 50, text: 'p95 < 50 ms' };
    // 100 runs: 95 of 10 ms, 5 of 500 ms; rank 95 is still 10 ms.
    const samples = [...Array.from({ length: 95 }, () => 10), 500, 500, 500, 500, 500];
    const f = figure({ ...base, samples, target });
    expect(f.p95).toBe(10);
    expect(f.p99).toBe(500);
    expect(f.verdict).toBe('met');
    expect(targetValue(f)).toBe(10);
    // One more slow run moves rank 95 onto it.
    expect(figure({ ...base, samples: [...samples.slice(1), 500], target }).verdict).toBe('missed');
  });

  it('reads a p95 target from the p99 of a figure written before p95 was recorded', () => {
    const old = { ...figure({ ...base, samples: [1, 2, 3] }), p95: undefined };
    expect(targetValue({ ...old, target: { on: 'p95', op: '<', value: 5, text: 'p95 < 5' } })).toBe(3);
    expect(targetValue({ ...old, target: { on: 'median', op: '<', value: 5, text: 'median < 5' } })).toBe(2);
  });

  it('meets an equality target only when every run equals it', () => {
    const target = { on: 'max' as const, op: '=' as const, value: 1, text: 'exactly 1' };
    expect(figure({ ...base, samples: [1, 1], target }).verdict).toBe('met');
    expect(figure({ ...base, samples: [1, 2], target }).verdict).toBe('missed');
  });

  it('gives the ratio of its median to the floor measured in the same run', () => {
    const f = figure({
      ...base,
      samples: [300, 400, 500],
      floor: { what: 'bare apply', samples: [100, 200, 300] },
    });
    expect(f.floor).toEqual({ what: 'bare apply', median: 200, ratio: 2 });
  });
});

describe('flatness', () => {
  const sized = (size: number, samples: number[]) =>
    figure({
      id: `fleet.redis-idle-per-cluster.${size}`,
      bench: 'fleet',
      title: `per cluster, ${size} clusters`,
      unit: 'commands/min',
      fleetSize: size,
      samples,
      command: 'c',
    });
  const judge = (...figures: ReturnType<typeof sized>[]) =>
    flatness(figures, 'fleet.redis-idle-per-cluster.', 'fleet', 'Redis per idle cluster', 'c');

  it('compares the two largest sizes, whatever order the figures come in', () => {
    const f = judge(sized(1000, [13]), sized(10, [100]), sized(100, [10]));
    expect(f?.id).toBe('fleet.redis-idle-per-cluster-flatness');
    expect(f?.title).toBe('Redis per idle cluster: per-cluster cost at 1000 ÷ at 100 clusters');
    expect(f?.median).toBeCloseTo(1.3);
    expect(f?.target?.text).toBe('flat: < 1.5× as the fleet grows 10×');
    expect(f?.verdict).toBe('met');
    expect(judge(sized(100, [10]), sized(1000, [15]))?.verdict).toBe('missed');
  });

  it('calls nothing at both sizes flat, and something after nothing not flat', () => {
    expect(judge(sized(100, [0]), sized(1000, [0]))?.verdict).toBe('met');
    const grew = judge(sized(100, [0]), sized(1000, [2]));
    expect(grew?.median).toBe(Number.POSITIVE_INFINITY);
    expect(grew?.verdict).toBe('missed');
  });

  it('has nothing to say about a single size', () => {
    expect(judge(sized(100, [10]))).toBeUndefined();
  });
});
