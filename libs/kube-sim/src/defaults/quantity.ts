/**
 * Kubernetes resource quantities in canonical form, as the apiserver stores them: `1000m` → `1`,
 * `0.5` → `500m`, `1024Mi` → `1Gi`, `1.5Gi` → `1536Mi`, `2000` → `2k`. Values are kept exactly
 * (BigInt), rounded up to nano units like resource.Quantity.
 */
const QUANTITY = /^([+-]?)(\d+(?:\.\d*)?|\.\d+)(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?\d+)?$/;
const BINARY = ['', 'Ki', 'Mi', 'Gi', 'Ti', 'Pi', 'Ei'];
const DECIMAL_EXP: Record<string, number> = {
  n: -9,
  u: -6,
  m: -3,
  '': 0,
  k: 3,
  M: 6,
  G: 9,
  T: 12,
  P: 15,
  E: 18,
};
const DECIMAL_SUFFIX = new Map(Object.entries(DECIMAL_EXP).map(([s, e]) => [e, s]));

export class QuantityError extends Error {
  override readonly name = 'QuantityError';
}

export function canonicalQuantity(input: string | number): string {
  const text = String(input).trim();
  const m = QUANTITY.exec(text);
  if (!m)
    throw new QuantityError(
      `quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'`,
    );
  const sign = m[1] === '-' ? -1n : 1n;
  const [intPart, fracPart = ''] = (m[2] ?? '0').split('.');
  let num = BigInt(`${intPart || '0'}${fracPart}`) * sign;
  let scale = fracPart.length; // value = num / 10^scale
  const suffix = m[3] ?? '';
  let format: 'binary' | 'decimal' | 'exponent' = 'decimal';
  const bin = BINARY.indexOf(suffix);
  if (suffix && bin > 0) {
    format = 'binary';
    num *= 1024n ** BigInt(bin);
  } else if (/^[eE]/.test(suffix)) {
    format = 'exponent';
    scale -= Number(suffix.slice(1));
  } else {
    scale -= DECIMAL_EXP[suffix] ?? 0;
  }
  if (scale < 0) {
    num *= 10n ** BigInt(-scale);
    scale = 0;
  }
  if (scale > 9) {
    const div = 10n ** BigInt(scale - 9);
    const q = num / div;
    num = num % div === 0n ? q : num > 0n ? q + 1n : q;
    scale = 9;
  }
  if (num === 0n) return '0';
  const isInteger = num % 10n ** BigInt(scale) === 0n;
  if (format === 'binary') {
    const v = num / 10n ** BigInt(scale);
    if (isInteger && (v >= 1024n || v <= -1024n)) {
      let k = 0;
      let rest = v;
      while (k < 6 && rest % 1024n === 0n) {
        rest /= 1024n;
        k++;
      }
      return `${rest}${BINARY[k]}`;
    }
    format = 'decimal';
  }
  let mant = num * 10n ** BigInt(9 - scale);
  let exp = -9;
  while (exp < 18 && mant % 1000n === 0n) {
    mant /= 1000n;
    exp += 3;
  }
  if (format === 'exponent') return exp === 0 ? `${mant}` : `${mant}e${exp}`;
  return `${mant}${DECIMAL_SUFFIX.get(exp) ?? ''}`;
}
