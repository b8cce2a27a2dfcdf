import { describe, expect, it } from 'vitest';
import {
  describeSignature,
  firstUnverified,
  isVerified,
  parseSignatureLog,
  SignatureLogError,
  signerOf,
  type CommitSignature,
} from './commit-signatures.js';

const C1 = '1111111111111111111111111111111111111111';
const C2 = '2222222222222222222222222222222222222222';
const SSH_FP = 'SHA256:12/U1FRODPSqmVOwD//T4gfIciCjAPV0gvBXsMxfscI';
const GPG_FP = '0123456789ABCDEF0123456789ABCDEF01234567';

/** One record of git's output, as SIGNATURE_LOG_FORMAT prints it. */
const record = (...fields: string[]) => `${fields.join('\x1f')}\x1e\n`;

/** Each row: git's status letter and fields → verified?, the signer a refusal names, its sentence. */
const CASES: {
  name: string;
  fields: [string, string, string, string, string, string];
  verified: boolean;
  signer: string;
  sentence: RegExp;
}[] = [
  {
    name: 'G: SSH key among the allowed signers',
    fields: [C1, 'G', SSH_FP, '', SSH_FP, 'alice@example.com'],
    verified: true,
    signer: `alice@example.com (${SSH_FP})`,
    sentence: /good signature by an allowed key/,
  },
  {
    name: 'G: GPG key in the keyring',
    fields: [C1, 'G', GPG_FP, GPG_FP, '89ABCDEF01234567', 'Alice <alice@example.com>'],
    verified: true,
    signer: `Alice <alice@example.com> (${GPG_FP})`,
    sentence: /good signature/,
  },
  {
    name: 'U: good SSH signature, key not allowed',
    fields: [C1, 'U', SSH_FP, '', SSH_FP, ''],
    verified: false,
    signer: `unknown signer (${SSH_FP})`,
    sentence: /not among the allowed signers/,
  },
  {
    name: 'B: bad signature',
    fields: [C1, 'B', '', '', '89ABCDEF01234567', 'Mallory'],
    verified: false,
    signer: 'Mallory (89ABCDEF01234567)',
    sentence: /bad signature/,
  },
  {
    name: 'X: expired signature',
    fields: [C1, 'X', GPG_FP, '', '', 'Alice'],
    verified: false,
    signer: `Alice (${GPG_FP})`,
    sentence: /expired/,
  },
  {
    name: 'Y: expired key',
    fields: [C1, 'Y', GPG_FP, '', '', 'Alice'],
    verified: false,
    signer: `Alice (${GPG_FP})`,
    sentence: /expired key/,
  },
  {
    name: 'R: revoked key',
    fields: [C1, 'R', GPG_FP, '', '', 'Alice'],
    verified: false,
    signer: `Alice (${GPG_FP})`,
    sentence: /revoked/,
  },
  {
    name: 'E: key missing, cannot check',
    fields: [C1, 'E', '', '', '89ABCDEF01234567', ''],
    verified: false,
    signer: 'unknown signer (89ABCDEF01234567)',
    sentence: /cannot be checked/,
  },
  {
    name: 'N: unsigned',
    fields: [C1, 'N', '', '', '', ''],
    verified: false,
    signer: 'unsigned',
    sentence: /^commit 111111111111: not signed \(signer: unsigned\)$/,
  },
];

describe('parseSignatureLog and the verdict of each status', () => {
  it.each(CASES)('$name', ({ fields, verified, signer, sentence }) => {
    const [s] = parseSignatureLog(record(...fields));
    expect(s).toMatchObject({
      commit: fields[0],
      status: fields[1],
      fingerprint: fields[2],
      signer: fields[5],
    });
    expect(isVerified(s!)).toBe(verified);
    expect(signerOf(s!)).toBe(signer);
    expect(describeSignature(s!)).toMatch(sentence);
  });

  it('keeps git order (newest first) over several commits; a signer may contain spaces and newlines do not split', () => {
    const out = record(C2, 'N', '', '', '', '') + record(C1, 'G', SSH_FP, '', SSH_FP, 'Alice Example');
    expect(parseSignatureLog(out).map((s) => [s.commit, s.status, s.signer])).toEqual([
      [C2, 'N', ''],
      [C1, 'G', 'Alice Example'],
    ]);
    expect(parseSignatureLog('')).toEqual([]);
  });

  it.each([
    ['a record with a missing field', `${C1}\x1fG\x1f\x1f\x1f\x1e`, /5 fields, not 6/],
    ['an unknown status letter', record(C1, 'Q', '', '', '', ''), /unknown signature status "Q"/],
    ['something that is not a commit id', record('HEAD', 'N', '', '', '', ''), /where a commit id belongs/],
  ])('refuses %s', (_name, out, message) => {
    expect(() => parseSignatureLog(out)).toThrow(SignatureLogError);
    expect(() => parseSignatureLog(out)).toThrow(message);
  });
});

describe('firstUnverified', () => {
  const sig = (commit: string, status: CommitSignature['status']): CommitSignature => ({
    commit,
    status,
    fingerprint: '',
    primaryFingerprint: '',
    keyId: '',
    signer: '',
  });
  it.each([
    { name: 'all good', list: [sig(C2, 'G'), sig(C1, 'G')], first: undefined },
    { name: 'an unsigned middle under a good head', list: [sig(C2, 'G'), sig(C1, 'N')], first: C1 },
    { name: 'the newest first when several fail', list: [sig(C2, 'U'), sig(C1, 'N')], first: C2 },
    { name: 'nothing to check', list: [], first: undefined },
  ])('$name', ({ list, first }) => {
    expect(firstUnverified(list)?.commit).toBe(first);
  });
});
