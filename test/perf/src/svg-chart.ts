import { type Series } from './types.js';

const COLOURS = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd'];
const W = 520;
const H = 280;
const M = { left: 64, right: 16, top: 28, bottom: 44 };

function esc(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

function niceMax(v: number): number {
  if (v <= 0) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

function fmt(v: number): string {
  return v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2);
}

/**
 * A line chart of cost against fleet size: x on a log scale (fleet sizes grow by tens), y linear
 * from zero so that flat really looks flat. Plain SVG, no script, no external font.
 */
export function lineChart(title: string, xLabel: string, series: readonly Series[]): string {
  const xs = [...new Set(series.flatMap((s) => s.points.map((p) => p.x)))].sort((a, b) => a - b);
  const ys = series.flatMap((s) => s.points.map((p) => p.y));
  if (xs.length === 0) return '';
  const yMax = niceMax(Math.max(...ys) * 1.05);
  const lx0 = Math.log10(xs[0] as number);
  const lx1 = Math.log10(xs[xs.length - 1] as number);
  const plotW = W - M.left - M.right;
  const plotH = H - M.top - M.bottom;
  const x = (v: number): number =>
    M.left + (lx1 === lx0 ? plotW / 2 : ((Math.log10(v) - lx0) / (lx1 - lx0)) * plotW);
  const y = (v: number): number => M.top + plotH - (v / yMax) * plotH;
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="11">`,
    `<rect width="${W}" height="${H}" fill="#fff"/>`,
    `<text x="${W / 2}" y="16" text-anchor="middle" font-size="13">${esc(title)}</text>`,
  ];
  for (let i = 0; i <= 4; i++) {
    const v = (yMax * i) / 4;
    out.push(
      `<line x1="${M.left}" x2="${W - M.right}" y1="${y(v)}" y2="${y(v)}" stroke="#ddd"/>`,
      `<text x="${M.left - 6}" y="${y(v) + 4}" text-anchor="end">${fmt(v)}</text>`,
    );
  }
  for (const v of xs) {
    out.push(
      `<line x1="${x(v)}" x2="${x(v)}" y1="${M.top}" y2="${M.top + plotH}" stroke="#eee"/>`,
      `<text x="${x(v)}" y="${M.top + plotH + 16}" text-anchor="middle">${v}</text>`,
    );
  }
  out.push(`<text x="${M.left + plotW / 2}" y="${H - 8}" text-anchor="middle">${esc(xLabel)}</text>`);
  series.forEach((s, i) => {
    const colour = COLOURS[i % COLOURS.length] as string;
    const pts = [...s.points].sort((a, b) => a.x - b.x);
    out.push(
      `<polyline fill="none" stroke="${colour}" stroke-width="2" points="${pts.map((p) => `${x(p.x).toFixed(1)},${y(p.y).toFixed(1)}`).join(' ')}"/>`,
    );
    for (const p of pts) {
      out.push(
        `<circle cx="${x(p.x).toFixed(1)}" cy="${y(p.y).toFixed(1)}" r="3" fill="${colour}"/>`,
        `<text x="${(x(p.x) + 5).toFixed(1)}" y="${(y(p.y) - 6).toFixed(1)}" fill="${colour}">${fmt(p.y)}</text>`,
      );
    }
    out.push(
      `<rect x="${M.left + 8}" y="${M.top + 6 + i * 15}" width="10" height="3" fill="${colour}"/>`,
      `<text x="${M.left + 22}" y="${M.top + 10 + i * 15}">${esc(s.name)}</text>`,
    );
  });
  out.push('</svg>');
  return out.join('\n');
}
