import { describe, expect, it } from 'vitest';
import { BundleBodyCache } from './bundle-body-cache.js';

describe('BundleBodyCache', () => {
  it('keeps bodies by digest and lets the least recently served go first when full', () => {
    const cache = new BundleBodyCache(10);
    cache.set('a', 'aaaa');
    cache.set('b', 'bbbb');
    expect(cache.get('a')).toBe('aaaa'); // a is now the most recent
    cache.set('c', 'cccc'); // 12 > 10: b, the least recent, goes
    expect([cache.get('a'), cache.get('b'), cache.get('c')]).toEqual(['aaaa', undefined, 'cccc']);
    expect(cache.count).toBe(2);
  });

  it('keeps the first body of a digest and never holds one larger than the whole cache', () => {
    const cache = new BundleBodyCache(10);
    cache.set('a', 'aaaa');
    cache.set('a', 'zzzz');
    cache.set('huge', 'x'.repeat(11));
    expect([cache.get('a'), cache.get('huge'), cache.count]).toEqual(['aaaa', undefined, 1]);
  });
});
