import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

export class CredentialCipherError extends Error {
  override readonly name = 'CredentialCipherError';
  constructor(
    readonly code: 'no-key' | 'unknown-key' | 'malformed' | 'tampered',
    message: string,
  ) {
    super(message);
  }
}

const VERSION = 'v1';

/**
 * AES-256-GCM for secrets at rest (repository tokens and SSH keys). A ciphertext is
 * `v1:<key id>:<iv>:<auth tag>:<data>` (base64url); the key id (first 8 hex digits of the key's
 * sha256) says which key sealed it, so a rotation can keep the old key for reading while the current
 * one seals. `context` (e.g. `repository:<id>`) is bound as additional data: a ciphertext copied onto
 * another row does not open.
 */
export class CredentialCipher {
  private readonly current: { id: string; key: Buffer } | null;
  private readonly byId = new Map<string, Buffer>();

  /** Keys as 64 hex digits; `current` null means nothing can be sealed. */
  constructor(current: string | null, previous: readonly string[] = []) {
    for (const hex of [...previous, ...(current ? [current] : [])]) {
      const key = Buffer.from(hex, 'hex');
      this.byId.set(keyId(key), key);
    }
    this.current = current
      ? { id: keyId(Buffer.from(current, 'hex')), key: Buffer.from(current, 'hex') }
      : null;
  }

  get canSeal(): boolean {
    return this.current !== null;
  }

  seal(plaintext: string, context: string): string {
    if (!this.current) {
      throw new CredentialCipherError(
        'no-key',
        'FLOTILLA_SECRETS_KEY is not set: credentials cannot be stored',
      );
    }
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.current.key, iv);
    cipher.setAAD(Buffer.from(context));
    const data = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return [VERSION, this.current.id, b64(iv), b64(cipher.getAuthTag()), b64(data)].join(':');
  }

  open(sealed: string, context: string): string {
    const parts = sealed.split(':');
    const [version, id, iv, tag, data] = parts;
    if (parts.length !== 5 || version !== VERSION || !id || !iv || !tag || data === undefined) {
      throw new CredentialCipherError('malformed', 'the stored credential is not a v1 ciphertext');
    }
    const key = this.byId.get(id);
    if (!key) {
      throw new CredentialCipherError(
        'unknown-key',
        `the stored credential was sealed with key ${id}, which is neither FLOTILLA_SECRETS_KEY nor in FLOTILLA_SECRETS_KEY_PREVIOUS`,
      );
    }
    try {
      const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
      decipher.setAAD(Buffer.from(context));
      decipher.setAuthTag(Buffer.from(tag, 'base64url'));
      return Buffer.concat([decipher.update(Buffer.from(data, 'base64url')), decipher.final()]).toString(
        'utf8',
      );
    } catch {
      throw new CredentialCipherError(
        'tampered',
        'the stored credential does not authenticate (altered, or moved from another row)',
      );
    }
  }

  /** Whether `sealed` was sealed with an older key and should be sealed again with the current one. */
  isStale(sealed: string): boolean {
    return this.current !== null && sealed.split(':')[1] !== this.current.id;
  }
}

function keyId(key: Buffer): string {
  return createHash('sha256').update(key).digest('hex').slice(0, 8);
}

function b64(b: Buffer): string {
  return b.toString('base64url');
}
