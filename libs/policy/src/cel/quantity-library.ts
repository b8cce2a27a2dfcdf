import { type Environment } from '@marcbachmann/cel-js';
import { parseQuantity, type Quantity as Fraction } from '@flotilla/diff';

/** A `resource.Quantity` inside CEL: an exact fraction, so `quantity('1Gi') == quantity('1024Mi')`. */
export class CelQuantity {
  constructor(
    readonly numerator: bigint,
    readonly denominator: bigint,
  ) {}

  static of(text: string): CelQuantity {
    const q = parseQuantity(text);
    // The API server refuses numbers without a unit part only when they are not quantities at all.
    if (q === undefined || text.trim() !== text || text === '')
      throw new Error(
        `quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$': '${text}'`,
      );
    return CelQuantity.from(q);
  }

  static from(q: Fraction): CelQuantity {
    return new CelQuantity(q.numerator, q.denominator);
  }

  compare(other: CelQuantity): number {
    const a = this.numerator * other.denominator;
    const b = other.numerator * this.denominator;
    return a < b ? -1 : a > b ? 1 : 0;
  }

  plus(other: CelQuantity, sign: 1n | -1n): CelQuantity {
    return new CelQuantity(
      this.numerator * other.denominator + sign * other.numerator * this.denominator,
      this.denominator * other.denominator,
    );
  }
}

const INT64_MAX = (1n << 63n) - 1n;
const INT64_MIN = -(1n << 63n);

/**
 * Kubernetes' quantity library (k8s.io/apiserver/pkg/cel/library/quantity.go) on cel-js:
 * `quantity`, `isQuantity`, comparison, arithmetic with quantities and integers, and conversions.
 */
export function registerQuantityLibrary(env: Environment): void {
  const T = 'kubernetes.Quantity';
  const ofInt = (n: bigint): CelQuantity => new CelQuantity(n, 1n);
  env
    .registerType(T, CelQuantity)
    .registerFunction(`quantity(string): ${T}`, (s: string) => CelQuantity.of(s))
    .registerFunction('isQuantity(string): bool', (s: string) => {
      try {
        CelQuantity.of(s);
        return true;
      } catch {
        return false;
      }
    })
    .registerOperator(`${T} == ${T}`, (a: CelQuantity, b: CelQuantity) => a.compare(b) === 0)
    .registerFunction(`${T}.isLessThan(${T}): bool`, (a: CelQuantity, b: CelQuantity) => a.compare(b) < 0)
    .registerFunction(`${T}.isGreaterThan(${T}): bool`, (a: CelQuantity, b: CelQuantity) => a.compare(b) > 0)
    .registerFunction(`${T}.compareTo(${T}): int`, (a: CelQuantity, b: CelQuantity) => BigInt(a.compare(b)))
    .registerFunction(`${T}.add(${T}): ${T}`, (a: CelQuantity, b: CelQuantity) => a.plus(b, 1n))
    .registerFunction(`${T}.add(int): ${T}`, (a: CelQuantity, b: bigint) => a.plus(ofInt(b), 1n))
    .registerFunction(`${T}.sub(${T}): ${T}`, (a: CelQuantity, b: CelQuantity) => a.plus(b, -1n))
    .registerFunction(`${T}.sub(int): ${T}`, (a: CelQuantity, b: bigint) => a.plus(ofInt(b), -1n))
    .registerFunction(`${T}.sign(): int`, (a: CelQuantity) => BigInt(a.compare(ofInt(0n))))
    .registerFunction(`${T}.isInteger(): bool`, (a: CelQuantity) => isInt64(a))
    .registerFunction(`${T}.asInteger(): int`, (a: CelQuantity) => {
      if (!isInt64(a)) throw new Error('cannot convert value to integer');
      return a.numerator / a.denominator;
    })
    .registerFunction(
      `${T}.asApproximateFloat(): double`,
      (a: CelQuantity) => Number(a.numerator) / Number(a.denominator),
    );
}

function isInt64(a: CelQuantity): boolean {
  if (a.numerator % a.denominator !== 0n) return false;
  const n = a.numerator / a.denominator;
  return n >= INT64_MIN && n <= INT64_MAX;
}
