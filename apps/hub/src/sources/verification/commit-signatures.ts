// What git says about commit signatures (`git log --format=…%G?…`), read into verdicts: pure, no I/O.

/** The `%G?` letters git prints for a commit's signature. */
export const SIGNATURE_STATUSES = ['G', 'B', 'U', 'X', 'Y', 'R', 'E', 'N'] as const;
export type SignatureStatus = (typeof SIGNATURE_STATUSES)[number];

/**
 * The format `signatureLogArgs` asks git for: commit, status, fingerprint, primary key fingerprint,
 * key id, signer — fields split by US (0x1f), commits by RS (0x1e), neither of which a signer can write.
 */
export const SIGNATURE_LOG_FORMAT = '%H%x1f%G?%x1f%GF%x1f%GP%x1f%GK%x1f%GS%x1e';

/** One commit's signature as git judged it against the allowed keys it was given. */
export interface CommitSignature {
  commit: string;
  status: SignatureStatus;
  /** The signing key's fingerprint (SSH: `SHA256:…`; GPG: the subkey's hex fingerprint), or ''. */
  fingerprint: string;
  /** GPG: the primary key's fingerprint when a subkey signed; else ''. */
  primaryFingerprint: string;
  keyId: string;
  /** The signer git names: the SSH principal or the GPG user id; '' when unknown. */
  signer: string;
}

export class SignatureLogError extends Error {
  override readonly name = 'SignatureLogError';
}

/** Parses `git log --format=SIGNATURE_LOG_FORMAT` output, newest commit first, as git printed it. */
export function parseSignatureLog(output: string): CommitSignature[] {
  const out: CommitSignature[] = [];
  for (const raw of output.split('\x1e')) {
    const record = raw.replace(/^\n+/, '');
    if (record.trim() === '') continue;
    const fields = record.split('\x1f');
    if (fields.length !== 6)
      throw new SignatureLogError(`git log wrote a record of ${fields.length} fields, not 6`);
    const [commit, status, fingerprint, primaryFingerprint, keyId, signer] = fields as [
      string,
      string,
      string,
      string,
      string,
      string,
    ];
    if (!/^[0-9a-f]{40}([0-9a-f]{24})?$/.test(commit))
      throw new SignatureLogError(`git log wrote "${commit.slice(0, 80)}" where a commit id belongs`);
    if (!isStatus(status))
      throw new SignatureLogError(`git log wrote the unknown signature status "${status}"`);
    out.push({ commit, status, fingerprint, primaryFingerprint, keyId, signer });
  }
  return out;
}

function isStatus(s: string): s is SignatureStatus {
  return (SIGNATURE_STATUSES as readonly string[]).includes(s);
}

/** Only a good signature by a key the repository allows (`G`) verifies a commit. */
export function isVerified(s: CommitSignature): boolean {
  return s.status === 'G';
}

/** Who signed, as a refusal names it: the signer and key git found, or "unsigned". */
export function signerOf(s: CommitSignature): string {
  if (s.status === 'N') return 'unsigned';
  const key = s.fingerprint || s.keyId;
  const who = s.signer || 'unknown signer';
  return key ? `${who} (${key})` : who;
}

const WHY: Record<SignatureStatus, string> = {
  G: 'good signature by an allowed key',
  B: 'bad signature: the commit was changed after it was signed, or the signature is corrupt',
  U: 'signed by a key that is not among the allowed signers',
  X: 'good signature that has expired',
  Y: 'signed by an expired key',
  R: 'signed by a revoked key',
  E: 'the signature cannot be checked: its key is not among the allowed keys',
  N: 'not signed',
};

/** A sentence for one commit's verdict: "commit 1a2b3c4d5e6f: not signed (signer: unsigned)". */
export function describeSignature(s: CommitSignature): string {
  return `commit ${s.commit.slice(0, 12)}: ${WHY[s.status]} (signer: ${signerOf(s)})`;
}

/**
 * The first commit (newest first, as git lists them) that is not verified, or undefined when every
 * one is: what `strict` refuses a revision for, and `head` (a list of one) too.
 */
export function firstUnverified(signatures: readonly CommitSignature[]): CommitSignature | undefined {
  return signatures.find((s) => !isVerified(s));
}
