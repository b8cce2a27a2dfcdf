import { describe, expect, it } from 'vitest';
import { AllowedSignersError, parseAllowedSigners } from './allowed-signers.js';

// Fingerprints as `ssh-keygen -lf` printed them for these keys.
const ED25519 = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIO5+McEBl4o1Z8rBvZZhbncMeUIGIjJZVTlRWJb4j9Vi';
const ED25519_FP = 'SHA256:12/U1FRODPSqmVOwD//T4gfIciCjAPV0gvBXsMxfscI';
const ECDSA =
  'ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBNqsHRt1tcpPhgsccO2TlmoLyBLPpqiKgyEUqgtCbwteorsLXOwcj1RMDKwkdBLlGf/uWcLQKLqO3qOqsBscyo4=';
const ECDSA_FP = 'SHA256:j0JpeYTvuoFjcM6VNIitHAtFB37GZwGe0uOfzjTwEOw';

describe('parseAllowedSigners: lines git and ssh-keygen accept', () => {
  it.each([
    { name: 'principal and key', text: `alice@example.com ${ED25519}`, fps: [ED25519_FP] },
    {
      name: 'with a comment after the key',
      text: `alice@example.com ${ED25519} alice laptop`,
      fps: [ED25519_FP],
    },
    {
      name: 'with options (quoted, with commas)',
      text: `alice@example.com,bob@example.com namespaces="git,file",valid-after="20260101" ${ECDSA}`,
      fps: [ECDSA_FP],
    },
    { name: 'a certificate authority', text: `*@example.com cert-authority ${ED25519}`, fps: [ED25519_FP] },
    {
      name: 'blank lines and # comments skipped',
      text: `# the platform team\n\nalice@example.com ${ED25519}\r\nbob@example.com ${ECDSA}\n`,
      fps: [ED25519_FP, ECDSA_FP],
    },
    { name: 'empty: no signer allowed', text: '', fps: [] },
  ])('$name', ({ text, fps }) => {
    expect(parseAllowedSigners(text).map((s) => s.fingerprint)).toEqual(fps);
  });
});

describe('parseAllowedSigners: lines refused, naming the line and the problem', () => {
  it.each([
    { name: 'no principal', text: ED25519, error: /line 1: starts with a key type/ },
    { name: 'no key', text: 'alice@example.com', error: /line 1: has no key type and key/ },
    {
      name: 'type without key',
      text: 'alice@example.com ssh-ed25519',
      error: /line 1: has no ssh-ed25519 key/,
    },
    {
      name: 'an unknown key type',
      text: 'alice@example.com ssh-foo AAAA',
      error: /line 1: unknown option or key type "ssh-foo"/,
    },
    {
      name: 'an unknown option',
      text: `alice@example.com permit-everything ${ED25519}`,
      error: /line 1: unknown option or key type "permit-everything"/,
    },
    {
      name: 'a key that is not base64',
      text: 'alice@example.com ssh-ed25519 not*base64',
      error: /line 1: the key is not a base64 ssh-ed25519 public key/,
    },
    {
      name: 'a key of another type than the line says',
      text: `alice@example.com ssh-rsa ${ED25519.split(' ')[1]}`,
      error: /line 1: the key is not a base64 ssh-rsa public key/,
    },
    {
      name: 'an unclosed quote, on line 3',
      text: `# ok\nalice@example.com ${ED25519}\nbob namespaces="git ${ED25519}`,
      error: /line 3: has an unclosed double quote/,
    },
  ])('$name', ({ text, error }) => {
    expect(() => parseAllowedSigners(text)).toThrow(AllowedSignersError);
    expect(() => parseAllowedSigners(text)).toThrow(error);
  });
});
