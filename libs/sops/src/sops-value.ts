import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { SopsError } from './sops-error.js';

/** A leaf of a SOPS document after decryption. `bytes` values come back as raw bytes. */
export type SopsScalar = string | number | boolean | Uint8Array | null;

type ValueType = 'str' | 'int' | 'float' | 'bool' | 'bytes' | 'time';

const ENC_VALUE = /^ENC\[AES256_GCM,data:([^,]*),iv:([^,]+),tag:([^,]+),type:([a-z]+)\]$/;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
const VALUE_TYPES: ReadonlySet<string> = new Set(['str', 'int', 'float', 'bool', 'bytes', 'time']);
const IV_BYTES = 32;
const TAG_BYTES = 16;

export function isEncryptedValue(value: unknown): value is string {
  return typeof value === 'string' && value.startsWith('ENC[');
}

/**
 * Decrypts one `ENC[AES256_GCM,...]` value. `aad` binds the value to its place in the document
 * (the path components joined by `:` plus a trailing `:`), so moving a ciphertext to another key
 * fails authentication just like editing it.
 */
export function decryptValue(encoded: string, dataKey: Uint8Array, aad: string, path: string): SopsScalar {
  const match = ENC_VALUE.exec(encoded);
  if (!match) {
    throw new SopsError(
      'malformed-ciphertext',
      path,
      'value is not of the form ENC[AES256_GCM,data:…,iv:…,tag:…,type:…]',
    );
  }
  const [, data = '', ivText = '', tagText = '', type = ''] = match;
  if (!VALUE_TYPES.has(type)) {
    throw new SopsError('malformed-ciphertext', path, `unknown value type "${type}"`);
  }
  const iv = decodeBase64(ivText, path, 'iv');
  const tag = decodeBase64(tagText, path, 'tag');
  if (iv.length !== IV_BYTES || tag.length !== TAG_BYTES) {
    throw new SopsError(
      'malformed-ciphertext',
      path,
      `iv must be ${IV_BYTES} bytes and tag ${TAG_BYTES} bytes`,
    );
  }
  let plain: Buffer;
  try {
    const decipher = createDecipheriv('aes-256-gcm', dataKey, iv, { authTagLength: TAG_BYTES });
    decipher.setAAD(Buffer.from(aad, 'utf8'));
    decipher.setAuthTag(tag);
    plain = Buffer.concat([decipher.update(decodeBase64(data, path, 'data')), decipher.final()]);
  } catch {
    throw new SopsError(
      'mac-mismatch',
      path,
      'value fails authentication: it was changed, moved from another key, or encrypted with another data key',
    );
  }
  return fromPlaintext(plain, type as ValueType, path);
}

/** Encrypts one leaf the way SOPS does: a fresh 32-byte IV per value, the path as AAD. */
export function encryptValue(
  value: Exclude<SopsScalar, null>,
  dataKey: Uint8Array,
  aad: string,
  path: string,
): string {
  const { type, plain } = toPlaintext(value, path);
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', dataKey, iv, { authTagLength: TAG_BYTES });
  cipher.setAAD(Buffer.from(aad, 'utf8'));
  const data = Buffer.concat([cipher.update(plain), cipher.final()]);
  const tag = cipher.getAuthTag();
  return `ENC[AES256_GCM,data:${data.toString('base64')},iv:${iv.toString('base64')},tag:${tag.toString('base64')},type:${type}]`;
}

/**
 * The bytes SOPS feeds to the MAC for a leaf (Go's `ToBytes`): strings as UTF-8, integers in
 * decimal, floats in Go's shortest non-exponent form, booleans as `True`/`False`.
 */
export function macBytes(value: Exclude<SopsScalar, null>): Uint8Array {
  if (typeof value === 'string') return Buffer.from(value, 'utf8');
  if (typeof value === 'boolean') return Buffer.from(value ? 'True' : 'False', 'utf8');
  if (typeof value === 'number') return Buffer.from(formatGoFloat(value), 'utf8');
  return value;
}

function fromPlaintext(plain: Buffer, type: ValueType, path: string): SopsScalar {
  const text = plain.toString('utf8');
  switch (type) {
    case 'str':
    case 'time':
      return text;
    case 'bytes':
      return new Uint8Array(plain);
    case 'int': {
      if (!/^[+-]?\d+$/.test(text))
        throw new SopsError('malformed-ciphertext', path, 'decrypted int is not an integer');
      return Number(text);
    }
    case 'float': {
      const n = Number(text);
      if (text.trim() === '' || Number.isNaN(n)) {
        throw new SopsError('malformed-ciphertext', path, 'decrypted float is not a number');
      }
      return n;
    }
    case 'bool': {
      // Go's strconv.ParseBool, which SOPS uses
      if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(text)) return true;
      if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(text)) return false;
      throw new SopsError('malformed-ciphertext', path, 'decrypted bool is neither true nor false');
    }
  }
}

function toPlaintext(value: Exclude<SopsScalar, null>, path: string): { type: ValueType; plain: Buffer } {
  if (typeof value === 'string') return { type: 'str', plain: Buffer.from(value, 'utf8') };
  if (typeof value === 'boolean') return { type: 'bool', plain: Buffer.from(String(value), 'utf8') };
  if (typeof value === 'number') {
    if (!Number.isFinite(value))
      throw new SopsError('unsupported-value', path, 'cannot encrypt a non-finite number');
    return {
      type: Number.isInteger(value) ? 'int' : 'float',
      plain: Buffer.from(formatGoFloat(value), 'utf8'),
    };
  }
  return { type: 'bytes', plain: Buffer.from(value) };
}

function decodeBase64(text: string, path: string, field: string): Buffer {
  if (!BASE64.test(text) || text.length % 4 !== 0) {
    throw new SopsError('malformed-ciphertext', path, `${field} is not valid base64`);
  }
  return Buffer.from(text, 'base64');
}

/**
 * Go's `strconv.FormatFloat(f, 'f', -1, 64)`: the shortest digits that round-trip, never in
 * exponent notation (JavaScript switches to `1e+21` style, which would change the MAC).
 */
export function formatGoFloat(n: number): string {
  const text = String(n);
  const exp = /^(-?)(\d)(?:\.(\d+))?e([+-]\d+)$/.exec(text);
  if (!exp) return text;
  const [, sign = '', lead = '', frac = '', power = '0'] = exp;
  const digits = lead + frac;
  const point = 1 + Number(power);
  if (point <= 0) return `${sign}0.${'0'.repeat(-point)}${digits}`;
  if (point >= digits.length) return `${sign}${digits}${'0'.repeat(point - digits.length)}`;
  return `${sign}${digits.slice(0, point)}.${digits.slice(point)}`;
}
