import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { z } from 'zod';
import { toCelValue } from '../cel-value.js';
import { compileExpression } from './kubernetes-cel.js';

/**
 * testdata/cel/<library>.yaml: expressions of the Kubernetes CEL libraries with the `object` they
 * see, and the value they must give (YAML whole numbers read as CEL ints) or a part of their error.
 */
const TESTDATA = join(import.meta.dirname, '..', 'testdata', 'cel');

const caseSchema = z.union([
  z.strictObject({ expression: z.string(), object: z.unknown().optional(), result: z.unknown() }),
  z.strictObject({ expression: z.string(), object: z.unknown().optional(), error: z.string() }),
]);

/** CEL values back to plain data for comparison: ints to numbers, maps to objects. */
function plain(v: unknown): unknown {
  if (typeof v === 'bigint') return Number(v);
  if (Array.isArray(v)) return v.map(plain);
  if (v instanceof Map) return Object.fromEntries([...v].map(([k, x]) => [String(k), plain(x)]));
  return v;
}

const files = readdirSync(TESTDATA).filter((f) => f.endsWith('.yaml'));

describe('Kubernetes CEL libraries on cel-js', () => {
  it('finds the tables', () => {
    expect(files.length).toBeGreaterThanOrEqual(5);
  });
  for (const file of files) {
    const cases = z.array(caseSchema).parse(parse(readFileSync(join(TESTDATA, file), 'utf8')));
    describe(file, () => {
      for (const c of cases) {
        it(c.expression, () => {
          const compiled = compileExpression(c.expression);
          if (!('program' in compiled)) throw new Error(`does not compile: ${compiled.error}`);
          const activation = { object: toCelValue(c.object ?? {}) };
          if ('error' in c) {
            expect(() => compiled.program(activation)).toThrow(c.error);
          } else {
            expect(plain(compiled.program(activation))).toEqual(c.result);
          }
        });
      }
    });
  }
});
