import { type MergeGenerator } from '../application-set.js';
import { GeneratorError } from '../generator-error.js';
import { mergeOverride, stableJson, toStringMap } from '../params.js';
import { type Params } from '../types.js';
import { type GeneratorEnv } from './generator-env.js';

/**
 * The first child's parameter sets, each overridden by the sets of later children that agree with
 * it on every `mergeKeys` value (compared as JSON). Sets of later children with no base match are
 * dropped; a child holding two sets with the same merge-key values is an error. Output keeps the
 * first child's order (Argo CD's is a map iteration, so any order is faithful).
 */
export function mergeGenerator(
  spec: MergeGenerator,
  env: GeneratorEnv,
  path: string,
  depth: number,
): Params[] {
  const children = spec.generators;
  if (children.length < 2) {
    throw new GeneratorError(
      'invalid-appset',
      'found less than two generators, Merge requires two or more',
      path,
    );
  }
  const mergeKeys = [...new Set(spec.mergeKeys ?? [])].sort();
  if (mergeKeys.length === 0) {
    throw new GeneratorError(
      'invalid-appset',
      'no merge keys were specified, Merge requires at least one',
      `${path}.mergeKeys`,
    );
  }
  const sets = children.map((child, i) => env.runChild(child, `${path}.generators[${i}]`, depth + 1));
  const base = byMergeKey(sets[0] ?? [], mergeKeys, `${path}.generators[0]`);
  sets.slice(1).forEach((overrides, i) => {
    const byKey = byMergeKey(overrides, mergeKeys, `${path}.generators[${i + 1}]`);
    for (const [key, current] of base) {
      const override = byKey.get(key);
      if (!override) continue;
      base.set(
        key,
        env.goTemplate
          ? mergeOverride(current, override)
          : { ...toStringMap(current), ...toStringMap(override) },
      );
    }
  });
  return [...base.values()];
}

function byMergeKey(sets: Params[], mergeKeys: string[], path: string): Map<string, Params> {
  const out = new Map<string, Params>();
  for (const set of sets) {
    const key = stableJson(Object.fromEntries(mergeKeys.map((k) => [k, set[k] ?? null])));
    if (out.has(key)) {
      throw new GeneratorError(
        'non-unique-merge-key',
        `the parameters from a generator were not unique by the given mergeKeys, Merge requires all param sets to be unique. Duplicate key was ${key}`,
        path,
      );
    }
    out.set(key, set);
  }
  return out;
}
