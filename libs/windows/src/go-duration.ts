/**
 * Go's `time.ParseDuration`, which Argo CD uses for a window's `duration`: a signed sequence of
 * decimal numbers, each with a unit (`ns`, `us`/`µs`, `ms`, `s`, `m`, `h`), such as `1h30m` or
 * `1.5h`; a bare `0` is allowed, a bare number or a `d` unit is not. Returns milliseconds
 * (fractional below 1 ms) or throws a RangeError that names the problem.
 */
const UNIT_MS: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3, // U+00B5 micro sign
  μs: 1e-3, // U+03BC Greek mu
  ms: 1,
  s: 1_000,
  m: 60_000,
  h: 3_600_000,
};

// Go stores durations as int64 nanoseconds; anything longer does not parse there either.
const MAX_MS = 9_223_372_036_854.775;

const TERM = /^(\d*)(?:\.(\d*))?(ns|us|µs|μs|ms|s|m|h)?/u;

export function parseGoDuration(text: string): number {
  let rest = text;
  let sign = 1;
  if (rest.startsWith('-') || rest.startsWith('+')) {
    sign = rest.startsWith('-') ? -1 : 1;
    rest = rest.slice(1);
  }
  if (rest === '0') return 0;
  if (rest === '') throw new RangeError(`invalid duration '${text}'`);
  let total = 0;
  while (rest !== '') {
    const m = TERM.exec(rest);
    const whole = m?.[1] ?? '';
    const frac = m?.[2];
    const unit = m?.[3];
    if (!m || (whole === '' && (frac === undefined || frac === ''))) {
      throw new RangeError(`invalid duration '${text}': expected a number at '${rest}'`);
    }
    if (unit === undefined) {
      throw new RangeError(
        `invalid duration '${text}': missing or unknown unit after '${m[0]}' (use ns, us, ms, s, m or h, e.g. 1h30m)`,
      );
    }
    total += Number(`${whole || '0'}.${frac || '0'}`) * (UNIT_MS[unit] ?? 0);
    rest = rest.slice(m[0].length);
  }
  if (total > MAX_MS)
    throw new RangeError(`invalid duration '${text}': longer than Go's maximum (~292 years)`);
  return sign * total;
}
