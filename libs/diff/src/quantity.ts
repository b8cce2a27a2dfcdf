/**
 * Kubernetes resource quantities (`resource.Quantity`), parsed exactly so that `1000m` ≡ `1`,
 * `0.5` ≡ `500m` and `1Gi` ≡ `1024Mi`. The value is kept as a fraction of two bigints; no float
 * rounding can make two different quantities look equal.
 */
export interface Quantity {
  numerator: bigint;
  denominator: bigint;
}

const BINARY: Record<string, bigint> = {
  Ki: 1n << 10n,
  Mi: 1n << 20n,
  Gi: 1n << 30n,
  Ti: 1n << 40n,
  Pi: 1n << 50n,
  Ei: 1n << 60n,
};
const DECIMAL: Record<string, number> = { n: -9, u: -6, m: -3, '': 0, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 };

const QUANTITY = /^([+-]?)(\d+(?:\.\d*)?|\.\d+)(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?\d+)?$/;

export function parseQuantity(input: unknown): Quantity | undefined {
  let text: string;
  if (typeof input === 'number' && Number.isFinite(input)) text = String(input);
  else if (typeof input === 'string') text = input.trim();
  else return undefined;
  // String(1e21) is exponent notation with no sign digit issues; `1e+21` is handled by the regex.
  const m = QUANTITY.exec(text);
  if (!m) return undefined;
  const [, sign = '', mantissa = '', suffix = ''] = m;
  const [whole = '', frac = ''] = mantissa.split('.');
  let numerator = BigInt(`${whole || '0'}${frac}`);
  let denominator = 10n ** BigInt(frac.length);
  if (sign === '-') numerator = -numerator;
  const binary = BINARY[suffix];
  let exponent = 0;
  if (binary !== undefined) numerator *= binary;
  else if (/^[eE][+-]?\d+$/.test(suffix)) exponent = Number(suffix.slice(1));
  else exponent = DECIMAL[suffix] ?? 0;
  if (exponent >= 0) numerator *= 10n ** BigInt(exponent);
  else denominator *= 10n ** BigInt(-exponent);
  return roundUpToNano({ numerator, denominator });
}

/** The API server keeps nine decimal places at most and rounds up what is finer. */
function roundUpToNano(q: Quantity): Quantity {
  const scaled = q.numerator * 1_000_000_000n;
  let nanos = scaled / q.denominator;
  if (scaled % q.denominator !== 0n && scaled > 0n) nanos += 1n;
  return { numerator: nanos, denominator: 1_000_000_000n };
}

export function quantitiesEqual(a: unknown, b: unknown): boolean {
  const x = parseQuantity(a);
  const y = parseQuantity(b);
  return x !== undefined && y !== undefined && x.numerator * y.denominator === y.numerator * x.denominator;
}
