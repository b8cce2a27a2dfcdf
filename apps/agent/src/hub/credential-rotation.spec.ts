import { describe, expect, it } from 'vitest';
import { pollSecondsBeforeRotation, rotationDue } from './credential-rotation.js';

const base = { clusterName: 'eu1', clusterId: 'c-1', credential: 'fla_x' };
const at = (iso: string) => new Date(iso);

describe('rotationDue', () => {
  it('rotates once a third of the lifetime is left', () => {
    const stored = { ...base, issuedAt: '2026-01-01T00:00:00Z', expiresAt: '2026-01-31T00:00:00Z' };
    expect(rotationDue(stored, at('2026-01-20T23:59:00Z'))).toBe(false);
    expect(rotationDue(stored, at('2026-01-21T00:00:00Z'))).toBe(true);
    expect(rotationDue(stored, at('2026-01-30T23:00:00Z'))).toBe(true);
  });

  it('never rotates a credential without expiry, nor an expired one (that one registers again)', () => {
    expect(rotationDue({ ...base, expiresAt: null }, at('2026-01-01T00:00:00Z'))).toBe(false);
    const stored = { ...base, issuedAt: '2026-01-01T00:00:00Z', expiresAt: '2026-01-02T00:00:00Z' };
    expect(rotationDue(stored, at('2026-01-02T00:00:01Z'))).toBe(false);
  });

  it('without an issue time (stored by an older agent), rotates in the last hour', () => {
    const stored = { ...base, expiresAt: '2026-01-02T00:00:00Z' };
    expect(rotationDue(stored, at('2026-01-01T22:59:00Z'))).toBe(false);
    expect(rotationDue(stored, at('2026-01-01T23:00:00Z'))).toBe(true);
  });
});

describe('pollSecondsBeforeRotation', () => {
  it('shortens a long-poll so that it ends when the rotation is due', () => {
    const stored = { ...base, issuedAt: '2026-01-01T00:00:00Z', expiresAt: '2026-01-01T00:01:30Z' };
    expect(pollSecondsBeforeRotation(stored, 30, at('2026-01-01T00:00:00Z'))).toBe(30);
    expect(pollSecondsBeforeRotation(stored, 30, at('2026-01-01T00:00:50Z'))).toBe(10);
    expect(pollSecondsBeforeRotation(stored, 30, at('2026-01-01T00:01:10Z'))).toBe(0);
    expect(pollSecondsBeforeRotation({ ...base, expiresAt: null }, 30, at('2026-01-01T00:00:00Z'))).toBe(30);
    expect(pollSecondsBeforeRotation(undefined, 30, at('2026-01-01T00:00:00Z'))).toBe(30);
  });
});
