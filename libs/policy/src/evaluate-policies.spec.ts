import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { z } from 'zod';
import { compilePolicySet, evaluatePolicies, policyContext } from './index.js';

/**
 * One directory per case under testdata/admission: policies.yaml holds the policies, bindings and
 * every other object they may look up (params, Namespaces, CRDs); requests.yaml lists objects to
 * admit and what must come of each. A decision's omitted fields are not compared.
 */
const TESTDATA = join(import.meta.dirname, 'testdata', 'admission');

const requestSchema = z.strictObject({
  name: z.string(),
  object: z.record(z.string(), z.unknown()),
  oldObject: z.record(z.string(), z.unknown()).optional(),
  namespace: z.string().optional(),
  groups: z.array(z.string()).optional(),
  expect: z.strictObject({
    allowed: z.boolean(),
    decisions: z.array(z.record(z.string(), z.unknown())),
    auditAnnotations: z.array(z.record(z.string(), z.unknown())).optional(),
    ignoredErrors: z.array(z.record(z.string(), z.unknown())).optional(),
  }),
});

function pick<T extends object>(
  actual: readonly T[],
  expected: readonly Record<string, unknown>[],
): unknown[] {
  return actual.map((a, i) =>
    Object.fromEntries(Object.keys(expected[i] ?? a).map((k) => [k, (a as Record<string, unknown>)[k]])),
  );
}

const cases = readdirSync(TESTDATA, { withFileTypes: true }).filter((d) => d.isDirectory());

describe('evaluatePolicies: Kubernetes documentation examples as data', () => {
  it('finds the cases', () => {
    expect(cases.length).toBeGreaterThanOrEqual(10);
  });

  for (const dir of cases) {
    const documents = parseAllDocuments(readFileSync(join(TESTDATA, dir.name, 'policies.yaml'), 'utf8')).map(
      (d) => d.toJS() as unknown,
    );
    const requests = z
      .array(requestSchema)
      .parse(parse(readFileSync(join(TESTDATA, dir.name, 'requests.yaml'), 'utf8')));
    describe(dir.name, () => {
      it('compiles every policy and binding', () => {
        expect(compilePolicySet(documents).errors).toEqual([]);
      });
      for (const request of requests) {
        it(request.name, () => {
          const { set } = compilePolicySet(documents);
          const verdict = evaluatePolicies(
            set,
            {
              object: request.object,
              oldObject: request.oldObject ?? null,
              ...(request.namespace === undefined ? {} : { namespace: request.namespace }),
              ...(request.groups === undefined ? {} : { groups: request.groups }),
            },
            policyContext(documents),
          );
          expect(verdict.allowed).toBe(request.expect.allowed);
          expect(pick(verdict.decisions, request.expect.decisions)).toEqual(request.expect.decisions);
          if (request.expect.auditAnnotations)
            expect(verdict.auditAnnotations).toEqual(request.expect.auditAnnotations);
          if (request.expect.ignoredErrors)
            expect(verdict.ignoredErrors).toEqual(request.expect.ignoredErrors);
        });
      }
    });
  }
});
