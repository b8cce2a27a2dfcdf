import { type MatrixGenerator } from '../application-set.js';
import { GeneratorError } from '../generator-error.js';
import { mergeOverride, toStringMap } from '../params.js';
import { type Params } from '../types.js';
import { type GeneratorEnv } from './generator-env.js';

/**
 * The cartesian product of exactly two children. The second child runs once per parameter set of
 * the first, templated with it, so it can consume the first's params. Conflicting keys: with
 * goTemplate the sets are deep-merged and the first child wins; with the default templating a key
 * holding two different values is an error.
 */
export function matrixGenerator(
  spec: MatrixGenerator,
  env: GeneratorEnv,
  path: string,
  depth: number,
): Params[] {
  const children = spec.generators;
  if (children.length < 2) {
    throw new GeneratorError(
      'invalid-appset',
      'found less than two generators, Matrix support only two',
      path,
    );
  }
  if (children.length > 2) {
    throw new GeneratorError(
      'invalid-appset',
      'found more than two generators, Matrix support only two',
      path,
    );
  }
  const out: Params[] = [];
  const first = env.runChild(children[0], `${path}.generators[0]`, depth + 1);
  for (const a of first) {
    const second = env.runChild(children[1], `${path}.generators[1]`, depth + 1, a);
    for (const b of second)
      out.push(env.goTemplate ? mergeOverride(mergeOverride({}, b), a) : combine(a, b, path));
  }
  return out;
}

function combine(a: Params, b: Params, path: string): Params {
  const out: Params = toStringMap(a);
  for (const [k, v] of Object.entries(toStringMap(b))) {
    if (Object.hasOwn(out, k) && out[k] !== v) {
      throw new GeneratorError(
        'duplicate-key',
        `found duplicate key ${k} with different value, a: ${String(out[k])} ,b: ${v}`,
        path,
      );
    }
    out[k] = v;
  }
  return out;
}
