import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { CredentialCipher, CredentialCipherError } from './credential-cipher.js';

const key = () => randomBytes(32).toString('hex');

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
    return undefined;
  } catch (e) {
    if (e instanceof CredentialCipherError) return e.code;
    throw e;
  }
}

describe('CredentialCipher', () => {
  const k1 = key();
  const k2 = key();

  it('round-trips, with a fresh IV each time', () => {
    const c = new CredentialCipher(k1);
    const a = c.seal('s3cret', 'repository:a');
    const b = c.seal('s3cret', 'repository:a');
    expect(a).not.toBe(b);
    expect(a).not.toContain('s3cret');
    expect(c.open(a, 'repository:a')).toBe('s3cret');
    expect(c.open(b, 'repository:a')).toBe('s3cret');
  });

  it.each<[string, (sealed: string) => [CredentialCipher, string, string], string]>([
    ['another row', (s) => [new CredentialCipher(k1), s, 'repository:b'], 'tampered'],
    [
      'a flipped byte',
      (s) => [new CredentialCipher(k1), s.slice(0, -2) + (s.endsWith('A') ? 'BA' : 'AA'), 'repository:a'],
      'tampered',
    ],
    ['an unknown key', (s) => [new CredentialCipher(k2), s, 'repository:a'], 'unknown-key'],
    ['garbage', () => [new CredentialCipher(k1), 'plaintext-token', 'repository:a'], 'malformed'],
  ])('refuses %s', (_name, make, code) => {
    const [cipher, sealed, context] = make(new CredentialCipher(k1).seal('s3cret', 'repository:a'));
    expect(codeOf(() => cipher.open(sealed, context))).toBe(code);
  });

  it('rotates: the previous key still opens, the current one seals, old ciphertexts are stale', () => {
    const old = new CredentialCipher(k1).seal('s3cret', 'repository:a');
    const rotated = new CredentialCipher(k2, [k1]);
    expect(rotated.isStale(old)).toBe(true);
    expect(rotated.open(old, 'repository:a')).toBe('s3cret');
    const resealed = rotated.seal(rotated.open(old, 'repository:a'), 'repository:a');
    expect(rotated.isStale(resealed)).toBe(false);
    expect(new CredentialCipher(k2).open(resealed, 'repository:a')).toBe('s3cret');
  });

  it('without a key nothing can be sealed', () => {
    const c = new CredentialCipher(null);
    expect(c.canSeal).toBe(false);
    expect(codeOf(() => c.seal('x', 'repository:a'))).toBe('no-key');
  });
});
