import type { SyncWindow } from '@flotilla/contract';
import { describe, expect, it } from 'vitest';
import { evaluateWindows } from './evaluate-windows.js';
import { windowIntervals } from './window-intervals.js';

const win = (over: Partial<SyncWindow>): SyncWindow => ({
  kind: 'deny',
  schedule: '0 22 * * *',
  duration: '2h',
  timeZone: 'UTC',
  applications: [],
  namespaces: [],
  clusters: [],
  manualSync: false,
  andOperator: false,
  ...over,
});
const ms = (iso: string) => Date.parse(iso);
const iso = (i: { start: number; end: number }) => [
  new Date(i.start).toISOString(),
  new Date(i.end).toISOString(),
];

describe('windowIntervals', () => {
  it('lists each day’s span, clipping the one running at the start and the one at the end', () => {
    const got = windowIntervals(win({}), ms('2026-06-01T23:00:00Z'), ms('2026-06-03T23:00:00Z'));
    expect(got.map(iso)).toEqual([
      ['2026-06-01T23:00:00.000Z', '2026-06-02T00:00:00.000Z'],
      ['2026-06-02T22:00:00.000Z', '2026-06-03T00:00:00.000Z'],
      ['2026-06-03T22:00:00.000Z', '2026-06-03T23:00:00.000Z'],
    ]);
  });

  it('follows the window’s zone across the spring-forward change (Europe/Berlin, 2026-03-29)', () => {
    const got = windowIntervals(
      win({ schedule: '0 1 * * *', timeZone: 'Europe/Berlin' }),
      ms('2026-03-28T00:00:00Z'),
      ms('2026-03-31T00:00:00Z'),
    );
    // 01:00 local is 00:00Z under CET, 23:00Z the day before under CEST; the span stays 2 h.
    expect(got.map(iso)).toEqual([
      ['2026-03-28T00:00:00.000Z', '2026-03-28T02:00:00.000Z'],
      ['2026-03-29T00:00:00.000Z', '2026-03-29T02:00:00.000Z'],
      ['2026-03-29T23:00:00.000Z', '2026-03-30T01:00:00.000Z'],
      ['2026-03-30T23:00:00.000Z', '2026-03-31T00:00:00.000Z'],
    ]);
  });

  it('is one interval for a window that never closes, and agrees with evaluateWindows inside it', () => {
    const w = win({ schedule: '* * * * *', duration: '1h', clusters: ['c'] });
    const from = ms('2026-06-01T00:00:00Z');
    const to = ms('2026-06-08T00:00:00Z');
    expect(windowIntervals(w, from, to)).toEqual([{ start: from, end: to }]);
    const target = { application: 'a', namespace: 'n', cluster: 'c' };
    expect(evaluateWindows([w], target, from + 3_600_000).canSync).toBe(false);
  });

  it('answers nothing for a range the window never touches', () => {
    expect(
      windowIntervals(
        win({ schedule: '0 22 1 1 *' }),
        ms('2026-06-01T00:00:00Z'),
        ms('2026-06-08T00:00:00Z'),
      ),
    ).toEqual([]);
  });
});
