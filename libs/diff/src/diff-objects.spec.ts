import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { ignoreRuleSchema } from '@flotilla/contract';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { DiffError, diffObjects, type DiffOptions } from './index.js';
import { fixtureCases } from './testing/fixture-cases.js';

/**
 * One directory per case under testdata/: desired.yaml and live.yaml, optional rules.yaml (ignore
 * rules, as `flotilla diff --ignore` reads them) and options.yaml (manager, yieldToManagers), and
 * expected.yaml: either the exact DiffResult or `error: {code, path}`.
 */
const TESTDATA = join(import.meta.dirname, 'testdata');

const expectedSchema = z.union([
  z.object({ error: z.object({ code: z.string(), path: z.string() }) }),
  z.object({
    inSync: z.boolean(),
    differences: z.array(
      z.object({
        path: z.string(),
        desired: z.unknown(),
        live: z.unknown(),
        liveManagers: z.array(z.string()).optional(),
      }),
    ),
  }),
]);
const optionsSchema = z.object({
  manager: z.string().optional(),
  yieldToManagers: z.array(z.string()).optional(),
});

const { cases, load } = fixtureCases(TESTDATA);

describe('diffObjects on testdata fixtures', () => {
  it('has fixtures', () => {
    expect(cases.length).toBeGreaterThan(20);
  });

  it.each(cases)('%s', (name) => {
    const opts: DiffOptions = { ...optionsSchema.parse(load(name, 'options.yaml') ?? {}) };
    const rules = load(name, 'rules.yaml');
    if (rules !== undefined) opts.ignoreRules = z.array(ignoreRuleSchema).parse(rules);
    const expected = expectedSchema.parse(load(name, 'expected.yaml'));
    const run = () => diffObjects(load(name, 'desired.yaml'), load(name, 'live.yaml'), opts);
    if ('error' in expected) {
      expect(run).toThrow(DiffError);
      try {
        run();
      } catch (err) {
        expect({ code: (err as DiffError).code, path: (err as DiffError).path }).toEqual(expected.error);
      }
      return;
    }
    expect(run()).toEqual(expected);
  });

  it.each(cases.filter((c) => !existsSync(join(TESTDATA, c, 'rules.yaml'))))(
    '%s: each object is in sync with itself',
    (name) => {
      for (const file of ['desired.yaml', 'live.yaml']) {
        const obj = load(name, file);
        expect(diffObjects(obj, structuredClone(obj))).toEqual({ inSync: true, differences: [] });
      }
    },
  );
});

describe('diffObjects with unknownFieldsDropped (Validate=false)', () => {
  const desired = {
    apiVersion: 'example.com/v1',
    kind: 'Widget',
    metadata: { name: 'w', namespace: 'n' },
    spec: { size: 3, colur: 'blue' },
  };
  const applied = (fields: Record<string, unknown>) => ({
    ...desired,
    spec: { size: 3 },
    metadata: {
      name: 'w',
      namespace: 'n',
      managedFields: [
        {
          manager: 'flotilla',
          operation: 'Apply',
          apiVersion: 'example.com/v1',
          fieldsType: 'FieldsV1',
          fieldsV1: fields,
        },
      ],
    },
  });

  it('a declared field the server dropped is not drift once the manager has written the object', () => {
    const live = applied({ 'f:spec': { 'f:size': {} } });
    expect(diffObjects(desired, live).differences.map((d) => d.path)).toEqual(['/spec/colur']);
    expect(diffObjects(desired, live, { unknownFieldsDropped: true })).toEqual({
      inSync: true,
      differences: [],
    });
  });

  it('a changed value is still drift, and so is everything before the manager ever wrote it', () => {
    const changed = { ...applied({ 'f:spec': { 'f:size': {} } }), spec: { size: 4 } };
    expect(
      diffObjects(desired, changed, { unknownFieldsDropped: true }).differences.map((d) => d.path),
    ).toEqual(['/spec/size']);
    const foreign = { ...desired, spec: { size: 3 }, metadata: { name: 'w', namespace: 'n' } };
    expect(diffObjects(desired, foreign, { unknownFieldsDropped: true }).inSync).toBe(false);
  });
});
