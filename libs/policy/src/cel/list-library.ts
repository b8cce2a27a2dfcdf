import { type Environment } from '@marcbachmann/cel-js';

type Comparable = bigint | number | string | boolean;

function compare(a: unknown, b: unknown): number {
  const x = a as Comparable;
  const y = b as Comparable;
  return x < y ? -1 : x > y ? 1 : 0;
}

function sameValue(a: unknown, b: unknown): boolean {
  // CEL compares int and double by value: 1 == 1.0.
  const numeric = (v: unknown): v is number | bigint => typeof v === 'number' || typeof v === 'bigint';
  if (numeric(a) && numeric(b)) return Number(a) === Number(b);
  if (typeof a !== 'object' || a === null || typeof b !== 'object' || b === null) return a === b;
  const text = (v: unknown): string =>
    JSON.stringify(v, (_, x: unknown) => (typeof x === 'bigint' ? `${x}n` : x));
  return text(a) === text(b);
}

function extreme(list: readonly unknown[], which: 'min' | 'max'): unknown {
  if (list.length === 0) throw new Error(`${which} called on empty list`);
  const sign = which === 'min' ? -1 : 1;
  return list.reduce((best, v) => (compare(v, best) * sign > 0 ? v : best));
}

/** Kubernetes' list library (k8s.io/apiserver/pkg/cel/library/lists.go) on cel-js. */
export function registerListLibrary(env: Environment): void {
  env
    .registerFunction('list<A>.isSorted(): bool', (list: readonly unknown[]) =>
      list.every((v, i) => i === 0 || compare(list[i - 1], v) <= 0),
    )
    .registerFunction('list<A>.sum(): A', (list: readonly unknown[]) => {
      // An empty list sums to integer zero, as in Kubernetes.
      if (list.length === 0) return 0n;
      return list.reduce((acc, v) => (acc as number) + (v as number));
    })
    .registerFunction('list<A>.min(): A', (list: readonly unknown[]) => extreme(list, 'min'))
    .registerFunction('list<A>.max(): A', (list: readonly unknown[]) => extreme(list, 'max'))
    .registerFunction('list<A>.indexOf(A): int', (list: readonly unknown[], v: unknown) =>
      BigInt(list.findIndex((x) => sameValue(x, v))),
    )
    .registerFunction('list<A>.lastIndexOf(A): int', (list: readonly unknown[], v: unknown) =>
      BigInt(list.findLastIndex((x) => sameValue(x, v))),
    );
}
