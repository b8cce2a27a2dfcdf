import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { generate } from './generate.js';
import { GeneratorError } from './generator-error.js';
import { parseApplicationSet } from './application-set.js';
import { contextFor, loadCases } from './testing/generator-cases.js';

const casesDir = fileURLToPath(new URL('./testdata/cases', import.meta.url));

for (const { file, cases } of loadCases(casesDir)) {
  describe(file, () => {
    for (const c of cases) {
      it(c.name, () => {
        const run = () => generate(parseApplicationSet(c.appset), contextFor(c));
        if (c.error) {
          let caught: unknown;
          try {
            run();
          } catch (err) {
            caught = err;
          }
          expect(caught).toBeInstanceOf(GeneratorError);
          const err = caught as GeneratorError;
          expect(err.code).toBe(c.error.code);
          if (c.error.message !== undefined) expect(err.message).toContain(c.error.message);
          if (c.error.path !== undefined) expect(err.path).toBe(c.error.path);
          return;
        }
        const result = run();
        if (c.params) expect(result.params).toEqual(c.params);
        if (c.names) expect(result.targets.map((t) => t.name)).toEqual(c.names);
        if (c.applications) expect(result.targets.map((t) => t.application)).toEqual(c.applications);
        expect(result.targets.map((t) => t.params)).toEqual(result.params);
      });
    }
  });
}
