import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { planReportJsonSchema } from './plan-report.js';

const PUBLISHED = new URL('../../../docs/schemas/plan-report.schema.json', import.meta.url).pathname;

describe('the published plan report schema (docs/schemas/plan-report.schema.json)', () => {
  it('is up to date with the zod schema (run `npm run schema -w @flotilla/plan` if not)', () => {
    expect(JSON.parse(readFileSync(PUBLISHED, 'utf8'))).toEqual(planReportJsonSchema());
  });

  it('lets the report grow: no object refuses properties it does not list', () => {
    expect(JSON.stringify(planReportJsonSchema())).not.toContain('"additionalProperties":false');
    const schema = planReportJsonSchema() as { required: string[] };
    expect(schema.required).toEqual([
      'base',
      'head',
      'at',
      'changed',
      'summary',
      'fleet',
      'appSets',
      'projects',
      'policies',
    ]);
  });
});
