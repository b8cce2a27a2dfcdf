import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  clientSideApplyPatch,
  DiffError,
  LAST_APPLIED_ANNOTATION,
  patchTypeOf,
  withLastApplied,
} from './index.js';
import { fixtureCases } from './testing/fixture-cases.js';

/**
 * One directory per case under client-side-apply-testdata/: desired.yaml (the manifest), live.yaml
 * (the object in the cluster) and expected.yaml (`type` and the exact `patch`). In the expected
 * patch, a last-applied annotation written `(desired)` stands for withLastApplied(desired)'s own,
 * which the `unchanged` case and the agent's kubectl spec pin byte for byte.
 */
const TESTDATA = join(import.meta.dirname, 'client-side-apply-testdata');
const expectedSchema = z.object({
  type: z.enum(['strategic', 'merge']),
  patch: z.record(z.string(), z.unknown()),
});

const { cases, load } = fixtureCases(TESTDATA);

type Meta = { annotations?: Record<string, string> };

describe('clientSideApplyPatch on testdata fixtures', () => {
  it('has fixtures', () => {
    expect(cases.length).toBeGreaterThanOrEqual(8);
  });

  it.each(cases)('%s', (name) => {
    const desired = load(name, 'desired.yaml') as { metadata: Meta };
    const expected = expectedSchema.parse(load(name, 'expected.yaml'));
    const annotation = withLastApplied(desired).metadata.annotations?.[LAST_APPLIED_ANNOTATION];
    const wanted = expected.patch['metadata'] as Meta | undefined;
    if (wanted?.annotations?.[LAST_APPLIED_ANNOTATION] === '(desired)')
      wanted.annotations[LAST_APPLIED_ANNOTATION] = annotation as string;
    expect(clientSideApplyPatch(desired, load(name, 'live.yaml'))).toEqual(expected);
  });
});

describe('clientSideApplyPatch refusals', () => {
  const desired = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' }, data: { a: '1' } };

  it('refuses a live last-applied annotation that is not a JSON object, naming it, as kubectl does', () => {
    for (const text of ['{"apiVersion":', '["a"]']) {
      const live = { ...desired, metadata: { name: 'c', annotations: { [LAST_APPLIED_ANNOTATION]: text } } };
      expect(() => clientSideApplyPatch(desired, live)).toThrow(
        expect.objectContaining({
          code: 'invalid-object',
          path: `live.metadata.annotations["${LAST_APPLIED_ANNOTATION}"]`,
        }) as Error,
      );
    }
  });

  it('refuses a desired object without an apiVersion', () => {
    expect(() => clientSideApplyPatch({ kind: 'ConfigMap', metadata: { name: 'c' } }, undefined)).toThrow(
      DiffError,
    );
  });
});

describe('withLastApplied', () => {
  it("writes the annotation as kubectl does: Go's JSON of the object, keys sorted, annotations: {}", () => {
    const manifest = {
      kind: 'ConfigMap',
      apiVersion: 'v1',
      metadata: { name: 'c', namespace: 'default' },
      data: { html: '<a href="x">&</a>', esc: 'back\\b slash\bform\fend\u2028' },
    };
    const applied = withLastApplied(manifest);
    expect(applied.metadata).toEqual({
      name: 'c',
      namespace: 'default',
      annotations: {
        [LAST_APPLIED_ANNOTATION]:
          '{"apiVersion":"v1","data":{"esc":"back\\\\b slash\\u0008form\\u000cend\\u2028","html":"\\u003ca href=\\"x\\"\\u003e\\u0026\\u003c/a\\u003e"},"kind":"ConfigMap","metadata":{"annotations":{},"name":"c","namespace":"default"}}\n',
      },
    });
    expect(manifest.metadata).toEqual({ name: 'c', namespace: 'default' });
  });

  it('leaves a previous last-applied annotation out of the new one, and keeps the other annotations', () => {
    const applied = withLastApplied({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 's', annotations: { team: 'a', [LAST_APPLIED_ANNOTATION]: '{"old":true}\n' } },
    });
    expect(applied.metadata.annotations).toEqual({
      team: 'a',
      [LAST_APPLIED_ANNOTATION]:
        '{"apiVersion":"v1","kind":"Secret","metadata":{"annotations":{"team":"a"},"name":"s"}}\n',
    });
  });
});

describe('patchTypeOf', () => {
  it("sends kubectl's compiled-in kinds a strategic merge patch and everything else a JSON merge patch", () => {
    expect(patchTypeOf('v1')).toBe('strategic');
    expect(patchTypeOf('apps/v1')).toBe('strategic');
    expect(patchTypeOf('networking.k8s.io/v1')).toBe('strategic');
    expect(patchTypeOf('example.com/v1')).toBe('merge');
    expect(patchTypeOf('gateway.networking.k8s.io/v1')).toBe('merge');
    expect(patchTypeOf('apiextensions.k8s.io/v1')).toBe('merge');
  });
});
