import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { CompiledWindow } from './compiled-window.js';
import { validateWindows } from './validate-windows.js';

const MINUTE = 60_000;

const formats = new Map<string, Intl.DateTimeFormat>();

/** The wall-clock minute an instant shows in a zone, read with Intl rather than offset arithmetic. */
function wallClock(instant: number, zone: string): number {
  let format = formats.get(zone);
  if (!format) {
    format = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
    });
    formats.set(zone, format);
  }
  const part = Object.fromEntries(format.formatToParts(instant).map((p) => [p.type, Number(p.value)]));
  return Date.UTC(part['year'] ?? 0, (part['month'] ?? 1) - 1, part['day'], part['hour'], part['minute']);
}

/**
 * Brute force: walk every real minute, read its wall clock in the zone with Intl, and ask the
 * schedule whether that wall-clock minute matches. No offset arithmetic, no search shortcuts.
 */
function bruteFires(w: CompiledWindow, from: number, to: number): number[] {
  const out: number[] = [];
  for (let m = Math.ceil(from / MINUTE) * MINUTE; m <= to; m += MINUTE) {
    const wall = wallClock(m, w.clock.name);
    if (w.schedule.nextAfter(wall - 1, wall) === wall) out.push(m);
  }
  return out;
}

// Each zone with its 2026 changes (UTC); Lord Howe shifts by 30 minutes.
const ZONES: Record<string, string[]> = {
  'Europe/Paris': ['2026-03-29T01:00:00Z', '2026-10-25T01:00:00Z'],
  'America/New_York': ['2026-03-08T07:00:00Z', '2026-11-01T06:00:00Z'],
  'Australia/Lord_Howe': ['2026-04-04T15:00:00Z', '2026-10-03T15:30:00Z'],
  UTC: ['2026-06-01T00:00:00Z'],
};
const SCHEDULES = [
  '30 2 * * *',
  '*/20 1-3 * * *',
  '0 * * * *',
  '45 0,1,2,3 * * *',
  '* 2 * * *',
  '15 1 * * 0',
  '*/2 * * * *',
  '* * * * *',
  '*/5 0-3 * * *',
];
const DURATIONS = ['30m', '1h', '2h30m', '5m'];
const RANGE = 10 * 3_600_000;

/** From a list of fire times: when the window's state just after t next changes. */
function bruteNextEdge(fires: number[], dur: number, t: number): number | null {
  const openAfter = fires.some((f) => f <= t && t < f + dur);
  if (!openAfter) return fires.find((f) => f > t) ?? null;
  let end = Math.max(...fires.filter((f) => f <= t && t < f + dur).map((f) => f + dur));
  for (;;) {
    const inside = fires.filter((f) => f < end && f + dur > end);
    if (inside.length === 0) return end;
    end = Math.max(...inside.map((f) => f + dur));
  }
}

describe('CompiledWindow fire times and activity against a brute-force walk', () => {
  let n = 0;
  for (const [zone, changes] of Object.entries(ZONES)) {
    for (const schedule of SCHEDULES) {
      const duration = DURATIONS[n++ % DURATIONS.length] as string;
      it(`${schedule} for ${duration} in ${zone}`, () => {
        const [window] = validateWindows([{ kind: 'deny', schedule, duration, timeZone: zone }]);
        const w = CompiledWindow.compile(window as NonNullable<typeof window>, 0);
        for (const center of changes.map((c) => Date.parse(c))) {
          const fires = bruteFires(w, center - RANGE, center + RANGE);
          for (let k = -12; k <= 12; k++) {
            // Odd offsets land between minutes, even ones on fire-time candidates.
            const t = center + k * 37 * MINUTE + (k % 2 === 0 ? 0 : 17_000);
            const after = fires.find((f) => f > t) ?? null;
            const before = [...fires].reverse().find((f) => f < t) ?? null;
            expect(w.fireAfter(t, center + RANGE)).toBe(after);
            expect(w.fireBefore(t, false, center - RANGE)).toBe(before);
            const active = fires.some((f) => f < t && t < f + w.durationMs);
            expect(w.activity(t).at).toBe(active);
            const edge = bruteNextEdge(fires, w.durationMs, t);
            if (edge !== null && edge < center + RANGE - w.durationMs) {
              expect(w.nextEdge(t, center + RANGE)).toBe(edge);
            }
          }
        }
      });
    }
  }
});

describe('fire times match robfig/cron with a location', () => {
  const cases = parse(readFileSync(new URL('./testdata/robfig-next.yaml', import.meta.url), 'utf8')) as {
    from: string;
    schedule: string;
    next: string;
  }[];
  for (const c of cases) {
    it(`${c.schedule} after ${c.from}`, () => {
      const [window] = validateWindows([
        { kind: 'deny', schedule: c.schedule, duration: '1h', timeZone: 'America/New_York' },
      ]);
      const w = CompiledWindow.compile(window as NonNullable<typeof window>, 0);
      const from = Date.parse(c.from);
      expect(w.fireAfter(from, from + 5 * 366 * 86_400_000)).toBe(Date.parse(c.next));
    });
  }
});
