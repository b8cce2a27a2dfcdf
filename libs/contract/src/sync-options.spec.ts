import { describe, expect, it } from 'vitest';
import {
  readOptions,
  RESOURCE_COMPARE_OPTIONS,
  RESOURCE_SYNC_OPTIONS,
  resourceSyncOptionsOf,
  SyncOptionError,
  TARGET_SYNC_OPTIONS,
} from './sync-options.js';

const annotated = (annotations: Record<string, string>) => ({ metadata: { name: 'x', annotations } });

function failure(f: () => unknown): SyncOptionError {
  try {
    f();
  } catch (e) {
    if (e instanceof SyncOptionError) return e;
    throw e;
  }
  throw new Error('expected a SyncOptionError');
}

describe('readOptions', () => {
  it('returns the value of every honoured option', () => {
    const read = readOptions(
      [
        'RespectIgnoreDifferences=true',
        ' ServerSideApply = true ',
        'PruneLast=true',
        'PrunePropagationPolicy=orphan',
        'ApplyOutOfSyncOnly=true',
        'FailOnSharedResource=true',
        'Replace=true',
        'Force=true',
      ],
      TARGET_SYNC_OPTIONS,
      'o',
    );
    expect([...read]).toEqual([
      ['RespectIgnoreDifferences', 'true'],
      ['ServerSideApply', 'true'],
      ['PruneLast', 'true'],
      ['PrunePropagationPolicy', 'orphan'],
      ['ApplyOutOfSyncOnly', 'true'],
      ['FailOnSharedResource', 'true'],
      ['Replace', 'true'],
      ['Force', 'true'],
    ]);
  });

  // Each refused entry names its own index and says why, never a silent default.
  it.each([
    ['ServerSideApply=maybe', /expected ServerSideApply=true or ServerSideApply=false/],
    ['ClientSideApplyMigration=true', /stay owned by it/],
    [
      'PrunePropagationPolicy=cascade',
      /expected PrunePropagationPolicy=foreground or PrunePropagationPolicy=background or PrunePropagationPolicy=orphan/,
    ],
    ['PruneLast=maybe', /unsupported value "maybe" \(expected PruneLast=true or PruneLast=false\)/],
    ['NoSuchOption=true', /unknown option "NoSuchOption"/],
    ['RespectIgnoreDifferences', /unsupported value ""/],
  ])('refuses %s at its own index', (entry, why) => {
    const e = failure(() =>
      readOptions(['ServerSideApply=true', entry], TARGET_SYNC_OPTIONS, 'spec.syncOptions'),
    );
    expect(e.path).toBe('spec.syncOptions[1]');
    expect(e.message).toMatch(why);
    expect(e.code).toBe('unsupported-sync-option');
  });

  it('refuses an entry that is not a string', () => {
    expect(failure(() => readOptions([3], TARGET_SYNC_OPTIONS, 'o')).message).toMatch(/not a "Key=Value"/);
  });

  it('documents every option it knows: each value says what Flotilla does or why it refuses', () => {
    for (const table of [TARGET_SYNC_OPTIONS, RESOURCE_SYNC_OPTIONS, RESOURCE_COMPARE_OPTIONS])
      for (const [key, values] of Object.entries(table))
        for (const [value, rule] of Object.entries(values)) {
          const text = 'honoured' in rule ? rule.honoured : rule.refused;
          expect(text.length, `${key}=${value}`).toBeGreaterThan(10);
        }
  });
});

describe('resourceSyncOptionsOf', () => {
  it("reads Replace and Force only when the object says them, so the target's choice applies otherwise", () => {
    expect(resourceSyncOptionsOf({ metadata: { name: 'x' } })).toEqual({ prune: true, delete: true });
    expect(
      resourceSyncOptionsOf(annotated({ 'argocd.argoproj.io/sync-options': 'Force=true,Replace=true' })),
    ).toEqual({ prune: true, delete: true, replace: true, force: true });
    expect(resourceSyncOptionsOf(annotated({ 'flotilla.dev/sync-options': 'Replace=false' }))).toEqual({
      prune: true,
      delete: true,
      replace: false,
    });
    expect(
      resourceSyncOptionsOf(annotated({ 'argocd.argoproj.io/sync-options': 'ServerSideApply=false' })),
    ).toEqual({ prune: true, delete: true, serverSideApply: false });
  });

  it('prunes by default and keeps an object that says Prune=false, in either annotation', () => {
    expect(resourceSyncOptionsOf({ metadata: { name: 'x' } }).prune).toBe(true);
    expect(resourceSyncOptionsOf(annotated({ 'argocd.argoproj.io/sync-options': 'Prune=false' })).prune).toBe(
      false,
    );
    expect(
      resourceSyncOptionsOf(
        annotated({ 'flotilla.dev/sync-options': 'SkipDryRunOnMissingResource=true, Prune=false' }),
      ).prune,
    ).toBe(false);
  });

  it('deletes with the target by default and keeps an object that says Delete=false; Prune=false alone does not keep it', () => {
    expect(resourceSyncOptionsOf({ metadata: { name: 'x' } }).delete).toBe(true);
    expect(
      resourceSyncOptionsOf(annotated({ 'argocd.argoproj.io/sync-options': 'Prune=false, Delete=false' })),
    ).toEqual({ prune: false, delete: false });
    expect(resourceSyncOptionsOf(annotated({ 'flotilla.dev/sync-options': 'Prune=false' })).delete).toBe(
      true,
    );
    expect(() =>
      resourceSyncOptionsOf(annotated({ 'argocd.argoproj.io/sync-options': 'Delete=confirm' })),
    ).toThrow(/Delete=confirm is not supported/);
  });

  it('reads the compare options Argo CD writes without a value', () => {
    expect(
      resourceSyncOptionsOf(annotated({ 'argocd.argoproj.io/compare-options': 'IgnoreExtraneous' })).prune,
    ).toBe(true);
  });

  it('refuses what it cannot honour, naming the annotation and the entry', () => {
    const e = failure(() =>
      resourceSyncOptionsOf(annotated({ 'argocd.argoproj.io/sync-options': 'Prune=false,Delete=confirm' })),
    );
    expect(e.path).toBe('metadata.annotations["argocd.argoproj.io/sync-options"][1]');
    expect(
      failure(() => resourceSyncOptionsOf(annotated({ 'argocd.argoproj.io/sync-options': 'Prune=confirm' })))
        .message,
    ).toMatch(/Prune=false to keep/);
    expect(
      failure(() =>
        resourceSyncOptionsOf(annotated({ 'argocd.argoproj.io/compare-options': 'ServerSideDiff=true' })),
      ).path,
    ).toBe('metadata.annotations["argocd.argoproj.io/compare-options"][0]');
  });
});
