import { Decrypter, Encrypter, armor, identityToRecipient } from 'age-encryption';
import { SopsError } from './sops-error.js';
import type { SopsMetadata } from './sops-metadata.js';

const IDENTITY_PREFIX = /^AGE-SECRET-KEY-/;
const DATA_KEY_BYTES = 32;

/**
 * Reads age identities from the text of a key file (the `age-keygen` format that SOPS reads from
 * `SOPS_AGE_KEY_FILE`): lines starting with `AGE-SECRET-KEY-` are keys, `#` lines and blanks are
 * ignored. Several files or env values can simply be concatenated.
 */
export function parseAgeIdentities(text: string): string[] {
  const out: string[] = [];
  text.split(/\r?\n/).forEach((raw, i) => {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    if (!IDENTITY_PREFIX.test(line)) {
      throw new SopsError(
        'invalid-identity',
        `line ${i + 1}`,
        'expected an AGE-SECRET-KEY-… line or a # comment',
      );
    }
    out.push(line);
  });
  return out;
}

/** The public recipient (`age1…`) of each identity; fails with invalid-identity naming its index. */
export async function recipientsOf(identities: readonly string[]): Promise<string[]> {
  return Promise.all(
    identities.map(async (identity, i) => {
      try {
        return await identityToRecipient(identity);
      } catch (e) {
        throw new SopsError(
          'invalid-identity',
          `ageIdentities[${i}]`,
          `not a valid age identity (${(e as Error).message})`,
        );
      }
    }),
  );
}

/** Opens the file's 32-byte data key with the first `sops.age[]` entry one of the identities can decrypt. */
export async function unwrapDataKey(meta: SopsMetadata, identities: readonly string[]): Promise<Uint8Array> {
  if (meta.age.length === 0) {
    const others = meta.otherKeySources.length > 0 ? meta.otherKeySources.join(', ') : 'no key source';
    throw new SopsError(
      'unsupported-key-type',
      'sops',
      `the file is encrypted for ${others} only; the agent decrypts age recipients only — add an age recipient (sops updatekeys)`,
    );
  }
  const own = new Set(await recipientsOf(identities));
  const decrypter = new Decrypter();
  for (const identity of identities) decrypter.addIdentity(identity);
  for (const [i, entry] of meta.age.entries()) {
    let file: Uint8Array;
    try {
      file = armor.decode(entry.enc);
    } catch (e) {
      throw new SopsError(
        'malformed-ciphertext',
        `sops.age[${i}].enc`,
        `not an armored age file (${(e as Error).message})`,
      );
    }
    if (identities.length === 0) continue;
    let key: Uint8Array;
    try {
      key = await decrypter.decrypt(file, 'uint8array');
    } catch (e) {
      // a recipient we hold a key for must open; anything else is just "not ours"
      if (own.has(entry.recipient)) {
        throw new SopsError(
          'malformed-ciphertext',
          `sops.age[${i}].enc`,
          `data key does not decrypt (${(e as Error).message})`,
        );
      }
      continue;
    }
    if (key.length !== DATA_KEY_BYTES) {
      throw new SopsError(
        'malformed-ciphertext',
        `sops.age[${i}].enc`,
        `data key is ${key.length} bytes, expected 32`,
      );
    }
    return key;
  }
  const recipients = meta.age.map((a) => a.recipient).join(', ');
  const held =
    identities.length === 0
      ? 'no age identity is configured'
      : `the agent holds keys for ${[...own].join(', ')}`;
  throw new SopsError(
    'no-matching-key',
    'sops.age',
    `no configured age identity opens this file: it is encrypted for ${recipients}; ${held}`,
  );
}

/** Encrypts the data key for each recipient and armors it, as SOPS writes `sops.age[]`. */
export async function wrapDataKey(
  dataKey: Uint8Array,
  recipients: readonly string[],
): Promise<{ recipient: string; enc: string }[]> {
  const out: { recipient: string; enc: string }[] = [];
  for (const [i, recipient] of recipients.entries()) {
    const encrypter = new Encrypter();
    try {
      encrypter.addRecipient(recipient);
    } catch (e) {
      throw new SopsError(
        'invalid-identity',
        `recipients[${i}]`,
        `not a valid age recipient (${(e as Error).message})`,
      );
    }
    out.push({ recipient, enc: armor.encode(await encrypter.encrypt(dataKey)) });
  }
  return out;
}
