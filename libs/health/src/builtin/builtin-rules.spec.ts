import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { createHealthAssessor } from '../health-assessor.js';
import { type HealthResult } from '../health-result.js';

interface Case {
  name: string;
  expect: HealthResult | null;
  object: unknown;
}

const dir = join(import.meta.dirname, '../testdata/builtin');
const files = readdirSync(dir).filter((f) => f.endsWith('.cases.yaml'));
const assessor = await createHealthAssessor();

describe('built-in rules', () => {
  it('has a fixture file per rule family', () => {
    expect(files.length).toBeGreaterThanOrEqual(12);
  });

  for (const file of files.sort()) {
    describe(file.replace('.cases.yaml', ''), () => {
      const cases = parse(readFileSync(join(dir, file), 'utf8')) as Case[];
      for (const c of cases) {
        it(c.name, () => {
          const got = assessor.assess(c.object);
          if (c.expect === null) {
            expect(got).toBeNull();
          } else {
            expect(got?.status).toBe(c.expect.status);
            expect(got?.message).toBe(c.expect.message);
          }
        });
      }
    });
  }

  it('gives no verdict for something that is not an object', () => {
    expect(assessor.assess('Deployment')).toBeNull();
    expect(assessor.assess(null)).toBeNull();
    expect(assessor.assess([{ kind: 'Pod' }])).toBeNull();
  });
});
