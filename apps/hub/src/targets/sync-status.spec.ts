import { describe, expect, it } from 'vitest';
import { syncStatusOf } from './sync-status.js';

describe('syncStatusOf', () => {
  const desired = { desiredRevision: 'a1', bundleDigest: 'sha256:1' };

  it('is Unknown before any successful sync', () => {
    expect(
      syncStatusOf({ ...desired, lastSyncedRevision: null, lastSyncedDigest: null, lastSyncedAt: null }),
    ).toBe('Unknown');
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
});
