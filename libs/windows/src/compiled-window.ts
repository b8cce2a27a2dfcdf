import { type SyncWindow } from '@flotilla/contract';
import { CronSchedule } from './cron-schedule.js';
import { parseGoDuration } from './go-duration.js';
import { WindowError } from './window-error.js';
import { ZoneClock } from './zone-clock.js';

const DAY = 86_400_000;

/** Whether a window is active at an instant y, and in the open interval just after it. */
export interface Activity {
  at: boolean;
  after: boolean;
}

/**
 * One sync window made ready for evaluation: its schedule, duration and zone parsed once, with the
 * fire-time searches that decide activity. Times are epoch milliseconds (fractions allowed).
 *
 * Fire times are the instants whose wall-clock reading in the window's zone matches the cron, as
 * robfig/cron computes them when given a location: a wall-clock time skipped at spring-forward
 * never fires, one repeated at fall-back fires twice. The window is active at y when a fire time t
 * satisfies t < y < t + duration (Argo CD's `Next(y - duration) < y`), so both ends are excluded.
 */
export class CompiledWindow {
  /** The last stretch of continuous activity found, so batches of nearby times do not redo long searches. */
  private stretch: { from: number; to: number; complete: boolean } | null = null;

  private constructor(
    readonly index: number,
    readonly window: SyncWindow,
    readonly schedule: CronSchedule,
    readonly clock: ZoneClock,
    readonly durationMs: number,
  ) {}

  /** Parses the window's schedule, duration and zone; throws a WindowError naming the field at fault. */
  static compile(window: SyncWindow, index: number): CompiledWindow {
    if (window.kind !== 'allow' && window.kind !== 'deny') {
      throw new WindowError(
        'invalid-kind',
        index,
        `[${index}].kind`,
        `kind must be allow or deny, not '${String(window.kind)}'`,
      );
    }
    let schedule: CronSchedule;
    try {
      schedule = CronSchedule.parse(window.schedule);
    } catch (err) {
      throw new WindowError(
        'invalid-schedule',
        index,
        `[${index}].schedule`,
        `cannot parse schedule '${window.schedule}': ${(err as Error).message}`,
      );
    }
    let durationMs: number;
    try {
      durationMs = parseGoDuration(window.duration);
    } catch (err) {
      throw new WindowError('invalid-duration', index, `[${index}].duration`, (err as Error).message);
    }
    let clock: ZoneClock;
    try {
      clock = ZoneClock.of(window.timeZone);
    } catch (err) {
      throw new WindowError('invalid-time-zone', index, `[${index}].timeZone`, (err as Error).message);
    }
    return new CompiledWindow(index, window, schedule, clock, durationMs);
  }

  /** The first fire time strictly after x, or null if there is none up to `limit`. */
  fireAfter(x: number, limit: number): number | null {
    const { low } = this.clock.offsetBounds(x);
    const wallLimit = limit + DAY;
    let wall = x + low;
    let best: number | null = null;
    let stop = Infinity;
    for (;;) {
      const w = this.schedule.nextAfter(wall, Math.min(wallLimit, stop));
      if (w === null || w >= stop) break;
      for (const instant of this.clock.instantsOf(w)) {
        if (instant > x && (best === null || instant < best)) {
          best = instant;
          // Any earlier instant would have a wall-clock reading below best + the largest offset near it.
          stop = best + this.clock.offsetBounds(best).high;
        }
      }
      wall = w;
    }
    return best !== null && best <= limit ? best : null;
  }

  /** The last fire time before x (or at x when `inclusive`), or null if there is none down to `limit`. */
  fireBefore(x: number, inclusive: boolean, limit: number): number | null {
    const { high } = this.clock.offsetBounds(x);
    const wallLimit = limit - DAY;
    let wall = x + high + (inclusive ? 1 : 0);
    let best: number | null = null;
    let stop = -Infinity;
    for (;;) {
      const w = this.schedule.prevBefore(wall, Math.max(wallLimit, stop));
      if (w === null || w <= stop) break;
      for (const instant of this.clock.instantsOf(w)) {
        if ((instant < x || (inclusive && instant === x)) && (best === null || instant > best)) {
          best = instant;
          stop = best + this.clock.offsetBounds(best).low;
        }
      }
      wall = w;
    }
    return best !== null && best >= limit ? best : null;
  }

  activity(y: number): Activity {
    if (!(this.durationMs > 0)) return { at: false, after: false };
    const fire = this.fireAfter(y - this.durationMs, y);
    return { at: fire !== null && fire < y, after: fire !== null };
  }

  /**
   * The next instant after t at which this window's activity stops being what it is just after t
   * (it opens after a fire time, or closes when its last overlapping fire time + duration passes),
   * or null if that is beyond `end`.
   */
  nextEdge(t: number, end: number): number | null {
    if (!(this.durationMs > 0)) return null;
    if (!this.activity(t).after) return this.fireAfter(t, end);
    return this.stretchEnd(t, end);
  }

  /**
   * From fire time p, the last fire time reached through gaps shorter than the duration — the
   * window stays open all along — as long as the zone's offset stays put. This lets the stretch
   * search cross a day of `* * * * *` in one step instead of one step per duration. Near a DST
   * change it returns p and the search goes one fire time at a time.
   */
  private runCoveredUntil(p: number, end: number): number {
    const steady = this.clock.steadyUntil(p, end);
    if (steady <= p) return p;
    const offset = this.clock.offsetAt(p);
    return this.schedule.coveredUntil(p + offset, this.durationMs, steady - 1 + offset) - offset;
  }

  /** While active just after t: the first instant it is inactive again, or null if that is beyond `end`. */
  private stretchEnd(t: number, end: number): number | null {
    const dur = this.durationMs;
    let from: number;
    let e: number;
    const known = this.stretch;
    if (known && known.from <= t && t < known.to) {
      if (known.complete) return known.to;
      from = known.from;
      e = known.to;
    } else {
      from = this.fireBefore(t, true, t - dur) ?? t;
      e = from + dur;
    }
    // Overlapping fire times keep the window open: follow them until a gap of at least `duration`.
    for (;;) {
      if (e > end) {
        this.stretch = { from, to: e, complete: false };
        return null;
      }
      const p = this.fireBefore(e, false, e - dur);
      if (p === null || p + dur <= e) break;
      e = Math.max(e, this.runCoveredUntil(p, end) + dur);
    }
    this.stretch = { from, to: e, complete: true };
    return e;
  }
}
