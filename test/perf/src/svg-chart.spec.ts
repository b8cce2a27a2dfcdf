import { describe, expect, it } from 'vitest';
import { lineChart } from './svg-chart.js';

describe('lineChart', () => {
  it('draws one polyline per series with a point and a label per fleet size', () => {
    const svg = lineChart('RSS & CPU', 'clusters', [
      {
        chart: 'c',
        name: 'RSS (MB)',
        unit: 'MB',
        points: [
          { x: 1000, y: 400 },
          { x: 10, y: 100 },
          { x: 100, y: 150 },
        ],
      },
    ]);
    expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true);
    expect(svg.match(/<polyline /g)).toHaveLength(1);
    expect(svg.match(/<circle /g)).toHaveLength(3);
    expect(svg).toContain('RSS &amp; CPU');
    // The x axis is logarithmic: 100 sits halfway between 10 and 1000.
    const xs = [...svg.matchAll(/<circle cx="([\d.]+)"/g)].map((m) => Number(m[1]));
    expect(xs[1]! - xs[0]!).toBeCloseTo(xs[2]! - xs[1]!, 1);
  });

  it('draws nothing without points', () => {
    expect(lineChart('empty', 'clusters', [])).toBe('');
  });
});
