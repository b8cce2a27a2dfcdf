import { describe, expect, it } from 'vitest';
import { comparisonIsCurrent, syncStatusOf } from './sync-status.js';

describe('syncStatusOf', () => {
  const desired = {
    desiredRevision: 'a1',
    bundleDigest: 'sha256:1',
    syncPolicy: { automated: true },
    comparison: null,
  };
  const never = { lastSyncedRevision: null, lastSyncedDigest: null, lastSyncedAt: null };

  it('is Unknown before any successful sync', () => {
    expect(syncStatusOf({ ...desired, ...never })).toBe('Unknown');
  });

  it('is Synced only at the desired revision and bundle', () => {
    const at = new Date(0);
    expect(
      syncStatusOf({ ...desired, lastSyncedRevision: 'a1', lastSyncedDigest: 'sha256:1', lastSyncedAt: at }),
    ).toBe('Synced');
    expect(
      syncStatusOf({ ...desired, lastSyncedRevision: 'a0', lastSyncedDigest: 'sha256:1', lastSyncedAt: at }),
    ).toBe('OutOfSync');
    expect(
      syncStatusOf({ ...desired, lastSyncedRevision: 'a1', lastSyncedDigest: 'sha256:0', lastSyncedAt: at }),
    ).toBe('OutOfSync');
  });

  describe('automated sync off: the agent comparison answers', () => {
    const manual = { ...desired, syncPolicy: { automated: false } };
    const compared = (inSync: boolean, at: number, revision = 'a1') => ({
      revision,
      bundleDigest: 'sha256:1',
      inSync,
      observedAt: new Date(at),
    });

    it('never synced: OutOfSync or Synced as compared, instead of Unknown', () => {
      expect(syncStatusOf({ ...manual, ...never, comparison: compared(false, 10) })).toBe('OutOfSync');
      expect(syncStatusOf({ ...manual, ...never, comparison: compared(true, 10) })).toBe('Synced');
    });

    it('a comparison of another revision says nothing about the one Git wants', () => {
      expect(syncStatusOf({ ...manual, ...never, comparison: compared(true, 10, 'a0') })).toBe('Unknown');
    });

    it('drift after a sync shows; a sync after the comparison wins', () => {
      const synced = { lastSyncedRevision: 'a1', lastSyncedDigest: 'sha256:1', lastSyncedAt: new Date(20) };
      expect(syncStatusOf({ ...manual, ...synced, comparison: compared(false, 30) })).toBe('OutOfSync');
      expect(syncStatusOf({ ...manual, ...synced, comparison: compared(false, 10) })).toBe('Synced');
    });

    it('an automated target keeps reading its syncs', () => {
      expect(syncStatusOf({ ...desired, ...never, comparison: compared(false, 10) })).toBe('Unknown');
    });
  });

  it('a comparison is current only of the desired revision and bundle, and not older than the last sync', () => {
    const t = { desiredRevision: 'a1', bundleDigest: 'sha256:1', lastSyncedAt: new Date(20) };
    const c = { revision: 'a1', bundleDigest: 'sha256:1', observedAt: new Date(30) };
    expect(comparisonIsCurrent(t, c)).toBe(true);
    expect(comparisonIsCurrent({ ...t, lastSyncedAt: null }, { ...c, observedAt: new Date(0) })).toBe(true);
    expect(comparisonIsCurrent(t, { ...c, revision: 'a0' })).toBe(false);
    expect(comparisonIsCurrent(t, { ...c, bundleDigest: 'sha256:0' })).toBe(false);
    expect(comparisonIsCurrent(t, { ...c, observedAt: new Date(10) })).toBe(false);
  });
});
