import { describe, expect, it } from 'vitest';
import { highestMappedRole, requiredRole, roleAllows } from './role-policy.js';

describe('requiredRole', () => {
  it('takes the declared role; without one, reading needs viewer and anything else admin', () => {
    expect(requiredRole('POST', 'operator')).toBe('operator');
    expect(requiredRole('GET', 'admin')).toBe('admin');
    expect(requiredRole('GET', undefined)).toBe('viewer');
    expect(requiredRole('head', undefined)).toBe('viewer');
    for (const m of ['POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'])
      expect(requiredRole(m, undefined)).toBe('admin');
  });
});

describe('roleAllows', () => {
  it('orders viewer < operator < admin', () => {
    expect(roleAllows('admin', 'operator')).toBe(true);
    expect(roleAllows('operator', 'operator')).toBe(true);
    expect(roleAllows('operator', 'admin')).toBe(false);
    expect(roleAllows('viewer', 'operator')).toBe(false);
  });
});

describe('highestMappedRole', () => {
  const map = { readers: 'viewer', sre: 'operator', platform: 'admin' } as const;
  it('gives the highest role any group maps to, or null', () => {
    expect(highestMappedRole(['readers', 'sre'], map)).toBe('operator');
    expect(highestMappedRole(['platform', 'readers'], map)).toBe('admin');
    expect(highestMappedRole(['contractors'], map)).toBeNull();
    expect(highestMappedRole([], map)).toBeNull();
  });

  it('ignores names inherited from Object.prototype', () => {
    expect(highestMappedRole(['constructor', 'toString'], map)).toBeNull();
  });
});
