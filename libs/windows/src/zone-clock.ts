const DAY = 86_400_000;
/** Every time-zone transition in use today falls on a quarter hour (UTC), so offsets can be cached per quarter. */
const QUARTER = 900_000;
const CACHE_LIMIT = 200_000;

/**
 * Converts between real instants and the wall-clock readings of one IANA time zone, DST included.
 * A wall-clock minute can have no instant (skipped at spring-forward), one, or two (repeated at
 * fall-back).
 */
export class ZoneClock {
  private static readonly clocks = new Map<string, ZoneClock>();
  private readonly offsets = new Map<number, number>();
  /** Per UTC day: the offset if it holds all day, NaN on a day with a transition. */
  private readonly days = new Map<number, number>();
  private steady: { from: number; until: number } | null = null;

  private constructor(
    readonly name: string,
    private readonly format: Intl.DateTimeFormat,
  ) {}

  /** The clock of an IANA zone name (empty means UTC, as in Argo CD); throws a RangeError for unknown zones. */
  static of(name: string): ZoneClock {
    const key = name === '' ? 'UTC' : name;
    let clock = ZoneClock.clocks.get(key);
    if (!clock) {
      let format: Intl.DateTimeFormat;
      try {
        // The runtime's own tz database (ICU), read through its "GMT+02:00" rendering of an instant.
        format = new Intl.DateTimeFormat('en-US', { timeZone: key, timeZoneName: 'longOffset' });
      } catch (err) {
        throw new RangeError(`unknown time zone '${name}' (use an IANA name such as Europe/Paris)`, {
          cause: err,
        });
      }
      clock = new ZoneClock(key, format);
      ZoneClock.clocks.set(key, clock);
    }
    return clock;
  }

  /** UTC offset in milliseconds at an instant. */
  offsetAt(instant: number): number {
    const whole = this.dayOffset(Math.floor(instant / DAY));
    if (!Number.isNaN(whole)) return whole;
    const bucket = Math.floor(instant / QUARTER);
    let offset = this.offsets.get(bucket);
    if (offset === undefined) {
      offset = this.zoneOffset(bucket * QUARTER);
      if (this.offsets.size >= CACHE_LIMIT) this.offsets.clear();
      this.offsets.set(bucket, offset);
    }
    return offset;
  }

  /**
   * The first instant at or after `instant` whose UTC day holds a transition (or `limit`): before it
   * the offset does not change, so wall-clock and real time run in step.
   */
  steadyUntil(instant: number, limit: number): number {
    const known = this.steady;
    if (known && known.from <= instant && instant < known.until && known.until <= limit) return known.until;
    let day = Math.floor(instant / DAY);
    const first = day;
    while (day * DAY < limit && !Number.isNaN(this.dayOffset(day))) day++;
    const until = day === first ? instant : Math.min(day * DAY, limit);
    this.steady = { from: instant, until };
    return until;
  }

  private dayOffset(day: number): number {
    let offset = this.days.get(day);
    if (offset === undefined) {
      const start = this.midnightOffset(day);
      offset = start === this.midnightOffset(day + 1) ? start : NaN;
      if (this.days.size >= CACHE_LIMIT) this.days.clear();
      this.days.set(day, offset);
    }
    return offset;
  }

  /** The offset at 00:00 UTC of a day; neighbouring days share these, so each costs one zone lookup. */
  private midnightOffset(day: number): number {
    const bucket = (day * DAY) / QUARTER;
    let offset = this.offsets.get(bucket);
    if (offset === undefined) {
      offset = this.zoneOffset(day * DAY);
      this.offsets.set(bucket, offset);
    }
    return offset;
  }

  private zoneOffset(instant: number): number {
    const m = /GMT(?:([+-])(\d{2}):(\d{2})(?::(\d{2}))?)?$/.exec(this.format.format(instant));
    if (!m) throw new RangeError(`cannot read the UTC offset of ${this.name}`);
    if (m[1] === undefined) return 0;
    const ms = (Number(m[2]) * 3600 + Number(m[3]) * 60 + Number(m[4] ?? 0)) * 1000;
    return m[1] === '-' ? -ms : ms;
  }

  wallOf(instant: number): number {
    return instant + this.offsetAt(instant);
  }

  /** The instants, ascending, whose wall-clock reading is `wall`: none in a DST gap, two in a repeated hour. */
  instantsOf(wall: number): number[] {
    const before = this.offsetAt(wall - DAY);
    const after = this.offsetAt(wall + DAY);
    const out: number[] = [];
    for (const offset of before === after ? [before] : [before, after]) {
      const instant = wall - offset;
      if (this.offsetAt(instant) === offset && !out.includes(instant)) out.push(instant);
    }
    return out.sort((a, b) => a - b);
  }

  /** The smallest and largest offsets in force within a day either side of an instant. */
  offsetBounds(instant: number): { low: number; high: number } {
    const a = this.offsetAt(instant - DAY);
    const b = this.offsetAt(instant);
    const c = this.offsetAt(instant + DAY);
    return { low: Math.min(a, b, c), high: Math.max(a, b, c) };
  }
}
