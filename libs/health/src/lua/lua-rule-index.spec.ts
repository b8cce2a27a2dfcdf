import { describe, expect, it } from 'vitest';
import { LuaRuleIndex } from './lua-rule-index.js';

const gvk = (group: string, kind: string) => ({ group, version: 'v1', kind });

describe('LuaRuleIndex', () => {
  const index = new LuaRuleIndex([
    ['_.crossplane.io/_', 'crossplane any'],
    ['pkg.crossplane.io/_', 'pkg any kind'],
    ['pkg.crossplane.io/Provider', 'provider'],
    ['Service', 'core service'],
    ['apps/_', 'apps any'],
  ]);

  it('prefers an exact group and kind', () => {
    expect(index.find(gvk('pkg.crossplane.io', 'Provider'))).toBe('provider');
  });

  it('falls back to the most specific wildcard', () => {
    expect(index.find(gvk('pkg.crossplane.io', 'Configuration'))).toBe('pkg any kind');
    expect(index.find(gvk('aws.crossplane.io', 'Bucket'))).toBe('crossplane any');
  });

  it('matches a wildcard part as a whole, not a prefix', () => {
    expect(index.find(gvk('crossplane.io.evil.com', 'Bucket'))).toBeUndefined();
    expect(index.find(gvk('crossplane.io', 'Bucket'))).toBeUndefined();
  });

  it('names core kinds by kind alone', () => {
    expect(index.find(gvk('', 'Service'))).toBe('core service');
    expect(index.find(gvk('serving.knative.dev', 'Service'))).toBeUndefined();
  });

  it('reports its size', () => {
    expect(index.size).toBe(5);
  });
});
