import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { ignoreRuleSchema } from '@flotilla/contract';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { diffObjects, liveForDrift, type DiffOptions } from './index.js';
import { fixtureCases } from './testing/fixture-cases.js';

const TESTDATA = join(import.meta.dirname, 'testdata');
const fixtures = fixtureCases(TESTDATA);
const load = fixtures.load;
const cases = fixtures.cases.filter((name) => existsSync(join(TESTDATA, name, 'live.yaml')));

describe('liveForDrift', () => {
  it('drops only the status subresource entries of managedFields', () => {
    const live = load('status-written-by-controller', 'live.yaml') as {
      metadata: { managedFields: { manager: string }[] };
    };
    const kept = liveForDrift(live);
    expect(kept.metadata.managedFields.map((e) => e.manager)).toEqual(['flotilla', 'kubectl-edit']);
    expect(JSON.stringify(kept).length).toBeLessThan(JSON.stringify(live).length);
    // The input is left as it was (the watch cache may still hold it).
    expect(live.metadata.managedFields).toHaveLength(3);
    const scaled = load('replicas-drift', 'live.yaml');
    expect(liveForDrift(scaled)).toBe(scaled);
  });

  // The claim that makes keeping less safe: no comparison changes.
  it.each(cases)('gives the same comparison as the whole object: %s', (name) => {
    const opts: DiffOptions = {
      ...z
        .object({ manager: z.string().optional(), yieldToManagers: z.array(z.string()).optional() })
        .parse(load(name, 'options.yaml') ?? {}),
    };
    const rules = load(name, 'rules.yaml');
    if (rules !== undefined) opts.ignoreRules = z.array(ignoreRuleSchema).parse(rules);
    const desired = load(name, 'desired.yaml');
    const live = load(name, 'live.yaml');
    const compare = (l: unknown) => {
      try {
        return diffObjects(desired, l, opts);
      } catch (err) {
        return { error: (err as Error).message };
      }
    };
    expect(compare(liveForDrift(live))).toEqual(compare(live));
  });
});
