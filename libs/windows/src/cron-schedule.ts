import { CronPattern } from 'croner';

/**
 * A 5-field cron schedule with the grammar and day rules of robfig/cron v3 — the parser Argo CD
 * uses for sync windows (`Minute | Hour | Dom | Month | Dow`, no descriptors, no seconds) — and
 * fast fire-time searches over *wall-clock* time.
 *
 * Wall-clock instants are plain numbers: milliseconds since 1970-01-01T00:00 of the local calendar,
 * read as if that calendar were UTC. Mapping them to real instants in a time zone (where DST can
 * skip or repeat a wall-clock minute) is `ZoneClock`'s job.
 *
 * croner expands each field into its set of values; robfig's stricter grammar is checked first
 * because croner accepts more (`L`, `W`, `#`, `@daily`, day-of-week 7, six fields) and Argo CD
 * rejects all of those.
 */
interface FieldSpec {
  name: string;
  min: number;
  max: number;
  names?: readonly string[];
}

const FIELDS: readonly FieldSpec[] = [
  { name: 'minute', min: 0, max: 59 },
  { name: 'hour', min: 0, max: 23 },
  { name: 'day-of-month', min: 1, max: 31 },
  {
    name: 'month',
    min: 1,
    max: 12,
    names: ['', 'jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'],
  },
  { name: 'day-of-week', min: 0, max: 6, names: ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'] },
];

const MINUTE = 60_000;
const DAY = 86_400_000;
/** robfig gives up after five years; a schedule that never fires (30 February) ends the search there. */
const SEARCH_DAYS = 5 * 366;

export class CronSchedule {
  private readonly nextMinute: Int8Array;
  private readonly prevMinute: Int8Array;
  /** Fire minutes within a matching day (the same for every matching day), and the widest gap between them. */
  private readonly lastOfDay: number;
  private readonly widestGapInDay: number;

  private constructor(
    readonly expression: string,
    private readonly minutes: readonly boolean[],
    private readonly hours: readonly boolean[],
    private readonly daysOfMonth: readonly boolean[],
    private readonly months: readonly boolean[],
    private readonly daysOfWeek: readonly boolean[],
    /** robfig: when either day field is `*` or `?`, both must match; otherwise either may. */
    private readonly daysAnd: boolean,
  ) {
    this.nextMinute = new Int8Array(61).fill(-1);
    this.prevMinute = new Int8Array(61).fill(-1);
    for (let m = 59; m >= 0; m--) this.nextMinute[m] = minutes[m] ? m : (this.nextMinute[m + 1] ?? -1);
    let last = -1;
    let widest = 0;
    for (let h = 0; h < 24; h++) {
      for (let m = 0; m < 60; m++) {
        if (!hours[h] || !minutes[m]) continue;
        const at = (h * 60 + m) * MINUTE;
        if (last >= 0) widest = Math.max(widest, at - last);
        last = at;
      }
    }
    this.lastOfDay = last;
    this.widestGapInDay = widest;
    for (let m = 0; m < 60; m++)
      this.prevMinute[m] = minutes[m] ? m : m > 0 ? (this.prevMinute[m - 1] ?? -1) : -1;
  }

  /** Parses a robfig-style 5-field cron; throws a RangeError naming the field at fault. */
  static parse(expression: string): CronSchedule {
    const trimmed = expression.trim();
    if (trimmed.startsWith('@')) {
      throw new RangeError(
        `descriptors such as '${trimmed.split(/\s/)[0]}' are not supported; write the 5 fields`,
      );
    }
    if (/^(CRON_)?TZ=/.test(trimmed)) {
      throw new RangeError('a TZ= or CRON_TZ= prefix is not supported; set the window timeZone instead');
    }
    const fields = trimmed.split(/\s+/).filter((f) => f !== '');
    if (fields.length !== 5) {
      throw new RangeError(
        `expected exactly 5 fields (minute hour day-of-month month day-of-week), found ${fields.length}`,
      );
    }
    const normalised = fields.map((field, i) => checkField(field, FIELDS[i] as FieldSpec));
    let pattern: CronPattern;
    try {
      pattern = new CronPattern(normalised.join(' '), undefined, { mode: '5-part', sloppyRanges: true });
    } catch (err) {
      throw new RangeError((err as Error).message.replace(/^CronPattern: /, ''), { cause: err });
    }
    const bits = (values: readonly number[], offset: number, size: number): boolean[] =>
      Array.from({ length: size }, (_, i) => i >= offset && (values[i - offset] ?? 0) !== 0);
    const isStar = (field: string): boolean => field.split(',').some((part) => /^[*?](\/0*1)?$/.test(part));
    return new CronSchedule(
      fields.join(' '),
      bits(pattern.minute, 0, 60),
      bits(pattern.hour, 0, 24),
      bits(pattern.day, 1, 32),
      bits(pattern.month, 1, 13),
      bits(pattern.dayOfWeek, 0, 7),
      isStar(fields[2] as string) || isStar(fields[4] as string),
    );
  }

  /** The first matching wall-clock minute strictly after `wall`, or null if none within `limit`. */
  nextAfter(wall: number, limit = wall + SEARCH_DAYS * DAY): number | null {
    let t = Math.floor(wall / MINUTE) * MINUTE + MINUTE;
    while (t <= limit) {
      const d = new Date(t);
      const month = d.getUTCMonth();
      if (!this.months[month + 1]) {
        t = Date.UTC(d.getUTCFullYear(), month + 1, 1);
        continue;
      }
      if (this.dayMatches(d)) {
        for (let h = d.getUTCHours(); h < 24; h++) {
          if (!this.hours[h]) continue;
          const m = this.nextMinute[h === d.getUTCHours() ? d.getUTCMinutes() : 0] ?? -1;
          if (m >= 0) {
            const found = Date.UTC(d.getUTCFullYear(), month, d.getUTCDate(), h, m);
            return found <= limit ? found : null;
          }
        }
      }
      t = Date.UTC(d.getUTCFullYear(), month, d.getUTCDate() + 1);
    }
    return null;
  }

  /** The last matching wall-clock minute strictly before `wall`, or null if none down to `limit`. */
  prevBefore(wall: number, limit = wall - SEARCH_DAYS * DAY): number | null {
    let t = Math.ceil(wall / MINUTE) * MINUTE - MINUTE;
    while (t >= limit) {
      const d = new Date(t);
      const month = d.getUTCMonth();
      if (!this.months[month + 1]) {
        t = Date.UTC(d.getUTCFullYear(), month, 1) - MINUTE;
        continue;
      }
      if (this.dayMatches(d)) {
        for (let h = d.getUTCHours(); h >= 0; h--) {
          if (!this.hours[h]) continue;
          const m = this.prevMinute[h === d.getUTCHours() ? d.getUTCMinutes() : 59] ?? -1;
          if (m >= 0) {
            const found = Date.UTC(d.getUTCFullYear(), month, d.getUTCDate(), h, m);
            return found >= limit ? found : null;
          }
        }
      }
      t = Date.UTC(d.getUTCFullYear(), month, d.getUTCDate()) - MINUTE;
    }
    return null;
  }

  /**
   * From a fire time `wall`, the last fire time reached by hopping from fire to fire over gaps
   * shorter than `gap`, or the last fire time before `limit` if the hops get there. A window of
   * duration `gap` stays open from `wall` to that fire time + `gap`. When `gap` exceeds every gap
   * inside a day, whole days are crossed at once, so `* * * * *` for an hour costs a step per day.
   */
  coveredUntil(wall: number, gap: number, limit: number): number {
    let fire = wall;
    for (;;) {
      let last = fire;
      if (gap > this.widestGapInDay) last = Math.max(fire, Math.floor(fire / DAY) * DAY + this.lastOfDay);
      if (last > limit) return this.prevBefore(limit + 1, fire) ?? fire;
      const next = this.nextAfter(last, limit);
      if (next === null || next - last >= gap) return last;
      fire = next;
    }
  }

  private dayMatches(d: Date): boolean {
    const dom = this.daysOfMonth[d.getUTCDate()] === true;
    const dow = this.daysOfWeek[d.getUTCDay()] === true;
    return this.daysAnd ? dom && dow : dom || dow;
  }
}

/** Checks one field against robfig's grammar and bounds; returns it with names turned into numbers. */
function checkField(field: string, spec: FieldSpec): string {
  return field
    .split(',')
    .map((part) => {
      const m = /^(?:([*?])|([a-z0-9]+)(?:-([a-z0-9]+))?)(?:\/(\d+))?$/i.exec(part);
      if (!m) throw new RangeError(`${spec.name} field '${field}': cannot parse '${part}'`);
      const [, star, low, high, step] = m;
      if (step !== undefined && Number(step) === 0) {
        throw new RangeError(`${spec.name} field '${field}': step of range should be a positive number`);
      }
      // croner refuses a step wider than the range; robfig takes it as "just the first value".
      if (star !== undefined) {
        if (step === undefined) return '*';
        return Number(step) > spec.max - spec.min ? `${spec.min}` : `*/${Number(step)}`;
      }
      const start = value(low as string, field, spec);
      // robfig: "N/step" means "N-max/step".
      const end = high !== undefined ? value(high, field, spec) : step !== undefined ? spec.max : start;
      if (end > spec.max) {
        throw new RangeError(
          `${spec.name} field '${field}': end of range (${end}) above maximum (${spec.max})`,
        );
      }
      if (start > end) {
        throw new RangeError(
          `${spec.name} field '${field}': beginning of range (${start}) beyond end of range (${end})`,
        );
      }
      if (step === undefined) return start === end ? `${start}` : `${start}-${end}`;
      return Number(step) > end - start ? `${start}` : `${start}-${end}/${Number(step)}`;
    })
    .join(',');
}

function value(token: string, field: string, spec: FieldSpec): number {
  const named = spec.names?.indexOf(token.toLowerCase()) ?? -1;
  if (named >= 0) return named;
  if (!/^\d+$/.test(token)) throw new RangeError(`${spec.name} field '${field}': unknown value '${token}'`);
  const n = Number(token);
  if (n < spec.min) {
    throw new RangeError(
      `${spec.name} field '${field}': beginning of range (${n}) below minimum (${spec.min})`,
    );
  }
  if (n > spec.max) {
    throw new RangeError(`${spec.name} field '${field}': end of range (${n}) above maximum (${spec.max})`);
  }
  return n;
}
