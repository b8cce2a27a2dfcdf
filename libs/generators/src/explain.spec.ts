import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { parseApplicationSet } from './application-set.js';
import { explain } from './explain.js';
import { contextFor, type GeneratorCase } from './testing/generator-cases.js';

interface ExplainCase extends GeneratorCase {
  cluster: string;
  expect: {
    matched: boolean;
    generators: (Record<string, unknown> & { reasons?: string[] })[];
  };
}

const cases = parse(
  readFileSync(new URL('./testdata/explain/explain.yaml', import.meta.url), 'utf8'),
) as ExplainCase[];

describe('explain', () => {
  it.each(cases.map((c) => [c.name, c] as const))('%s', (_name, c) => {
    const cluster = (c.clusters ?? []).find((x) => x.name === c.cluster);
    if (!cluster) throw new Error(`case ${c.name}: no cluster ${c.cluster}`);
    const result = explain(parseApplicationSet(c.appset), contextFor(c), cluster);
    expect(result.matched).toBe(c.expect.matched);
    expect(result.generators).toHaveLength(c.expect.generators.length);
    c.expect.generators.forEach((want, i) => {
      const { reasons, ...rest } = want;
      const got = result.generators[i];
      expect(got).toMatchObject(rest);
      (reasons ?? []).forEach((r, j) => expect(got?.reasons[j]).toContain(r));
      if (got?.verdict === 'matched') expect(got.reasons).toEqual([]);
    });
  });
});
