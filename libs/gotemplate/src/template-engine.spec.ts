import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { TemplateEngine, TemplateError, type MissingKey } from './index.js';

interface TemplateCase {
  name: string;
  template: string;
  data?: unknown;
  missingKey?: MissingKey;
  expect?: string;
  error?: string;
}

const cases = parse(
  readFileSync(new URL('./testdata/templates.yaml', import.meta.url), 'utf8'),
) as TemplateCase[];
const engine = new TemplateEngine();

describe('Go text/template engine', () => {
  for (const c of cases) {
    it(c.name, () => {
      const run = () =>
        engine.parse(c.template).execute(c.data ?? {}, { missingKey: c.missingKey ?? 'default' });
      if (c.error !== undefined) {
        expect(run).toThrow(TemplateError);
        expect(run).toThrow(c.error);
      } else {
        expect(run()).toBe(c.expect);
      }
    });
  }
});
