import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { builtinSchema } from '../fieldpath/field-schema.js';
import { mergePatch } from './merge-patch.js';
import { strategicMergePatch } from './strategic-merge-patch.js';

interface Case {
  name: string;
  original: unknown;
  patch: unknown;
  expected: unknown;
}

const cases = parse(
  readFileSync(join(import.meta.dirname, 'testdata', 'strategic-cases.yaml'), 'utf8'),
) as Case[];

describe('strategicMergePatch (Deployment schema)', () => {
  it.each(cases.map((c) => [c.name, c] as const))('%s', (_name, c) => {
    expect(strategicMergePatch(c.original, c.patch, builtinSchema('Deployment'))).toEqual(c.expected);
  });
});

describe('mergePatch (RFC 7386)', () => {
  it('merges objects, deletes on null, replaces arrays', () => {
    expect(mergePatch({ a: { b: 1, c: 2 }, l: [1, 2] }, { a: { c: null, d: 3 }, l: [3] })).toEqual({
      a: { b: 1, d: 3 },
      l: [3],
    });
  });
});
