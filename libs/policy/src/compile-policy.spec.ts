import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { z } from 'zod';
import { compilePolicySet, formatPolicyPath } from './index.js';

/** testdata/invalid/cases.yaml: one document each and the errors it must be refused with. */
const cases = z
  .array(
    z.strictObject({
      name: z.string(),
      document: z.unknown(),
      errors: z.array(
        z.strictObject({
          code: z.string(),
          path: z.string(),
          expression: z.string().optional(),
          message: z.string(),
        }),
      ),
    }),
  )
  .parse(parse(readFileSync(join(import.meta.dirname, 'testdata', 'invalid', 'cases.yaml'), 'utf8')));

describe('compilePolicySet refuses what the API server refuses', () => {
  for (const c of cases) {
    it(c.name, () => {
      const { errors, set } = compilePolicySet([c.document]);
      expect(set.policies.size).toBe(0);
      expect(errors.map((e) => ({ code: e.code, path: formatPolicyPath(e.path) }))).toEqual(
        c.errors.map((e) => ({ code: e.code, path: e.path })),
      );
      // One document each: every error names it by its index.
      expect(errors.map((e) => e.document)).toEqual(c.errors.map(() => 0));
      c.errors.forEach((want, i) => {
        expect(errors[i]?.message).toContain(want.message);
        if (want.expression !== undefined) expect(errors[i]?.expression).toBe(want.expression);
      });
    });
  }
});
