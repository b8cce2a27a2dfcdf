export type SopsErrorCode =
  /** The object carries no usable `sops` metadata block. */
  | 'not-encrypted'
  /** The `sops` block is malformed (missing mac/lastmodified, bad field types, two selection rules). */
  | 'invalid-metadata'
  /** The file is encrypted only for key types the agent cannot use (PGP, KMS, Vault, Shamir groups). */
  | 'unsupported-key-type'
  /** None of the configured age identities can open the file's data key. */
  | 'no-matching-key'
  /** An age identity string that cannot be parsed. */
  | 'invalid-identity'
  /** An `ENC[...]` value (or the armored data key) that cannot be parsed or has the wrong shape. */
  | 'malformed-ciphertext'
  /** A value or the MAC fails authentication: the file was changed without the key. */
  | 'mac-mismatch'
  /** A value that cannot be encrypted (encryption side only). */
  | 'unsupported-value';

/**
 * Why a SOPS document could not be decrypted (or encrypted). `path` is the field path of the
 * offending input, e.g. `stringData.password` or `sops.mac`; empty for the document as a whole.
 * The message never contains plaintext.
 */
export class SopsError extends Error {
  override readonly name = 'SopsError';
  constructor(
    readonly code: SopsErrorCode,
    readonly path: string,
    message: string,
  ) {
    super(path ? `${path}: ${message}` : message);
  }
}
