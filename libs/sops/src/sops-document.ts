import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { recipientsOf, unwrapDataKey, wrapDataKey } from './age-keys.js';
import { SopsError } from './sops-error.js';
import {
  KEY_ORDER_FIELD,
  hasSopsBlock,
  isEncryptedPath,
  parseSopsMetadata,
  renderLastModified,
  ruleToMetadata,
  type SelectionRule,
} from './sops-metadata.js';
import { decryptValue, encryptValue, isEncryptedValue, macBytes, type SopsScalar } from './sops-value.js';

export interface DecryptOptions {
  /** age identities (`AGE-SECRET-KEY-1…`), e.g. from {@link parseAgeIdentities} over the agent's key file. */
  ageIdentities: readonly string[];
}

export interface EncryptOptions {
  /** age recipients (`age1…`) that may decrypt the result. */
  recipients: readonly string[];
  /** At most one selection rule, as in `.sops.yaml`; none means SOPS' default `unencrypted_suffix: _unencrypted`. */
  encryptedRegex?: string;
  unencryptedRegex?: string;
  encryptedSuffix?: string;
  unencryptedSuffix?: string;
  /** MAC only the encrypted values (`mac_only_encrypted`), so plain fields may change without re-encrypting. */
  macOnlyEncrypted?: boolean;
  /** Defaults to now. */
  lastModified?: Date;
}

type Tree = { [key: string]: Node };
type Node = SopsScalar | Date | undefined | Node[] | Tree;

/** `sha256("sops")`: SOPS seeds the MAC with it when `mac_only_encrypted` is on, so the two modes never collide. */
const MAC_ONLY_ENCRYPTED_SEED = createHash('sha256').update('sops').digest();
const SOPS_FORMAT_VERSION = '3.9.0';

/** Whether `obj` (e.g. a Secret from a bundle) carries a SOPS metadata block and needs decrypting. */
export function isSopsEncrypted(obj: unknown): boolean {
  return hasSopsBlock(obj);
}

/**
 * Decrypts a SOPS-encrypted object with age identities and returns the plaintext object without
 * its `sops` block. Every encrypted value is authenticated (AES-256-GCM with its path as AAD) and
 * the document MAC is recomputed over all values, in document order, and compared with the stored
 * one. Any failure throws a {@link SopsError}; nothing is returned, so there is never a partial
 * plaintext.
 */
export async function decryptSopsObject(
  obj: unknown,
  options: DecryptOptions,
): Promise<Record<string, unknown>> {
  if (!hasSopsBlock(obj))
    throw new SopsError('not-encrypted', 'sops', 'the object has no sops metadata block');
  const meta = parseSopsMetadata(obj.sops);
  const dataKey = await unwrapDataKey(meta, options.ageIdentities);

  const hash = createHash('sha512');
  if (meta.macOnlyEncrypted) hash.update(MAC_ONLY_ENCRYPTED_SEED);
  const { sops: _sops, ...body } = obj;
  const plain = walk(body, [], '', meta.keyOrder, (value, path, pointer) => {
    const encrypted = isEncryptedPath(path, meta.rule);
    let out: Node = value;
    if (encrypted && value !== null && value !== undefined && value !== '') {
      if (!isEncryptedValue(value)) {
        throw new SopsError(
          'malformed-ciphertext',
          displayPath(pointer),
          'expected an ENC[…] value here (the encryption rule covers this field) but found plaintext',
        );
      }
      out = decryptValue(value, dataKey, `${path.join(':')}:`, displayPath(pointer));
    }
    if (out !== null && out !== undefined && (encrypted || !meta.macOnlyEncrypted)) {
      hash.update(leafBytes(out, pointer));
    }
    return out;
  }) as Record<string, unknown>;

  const expected = hash.digest('hex').toUpperCase();
  let stored: SopsScalar;
  try {
    stored = decryptValue(meta.mac, dataKey, meta.lastModified, 'sops.mac');
  } catch (e) {
    if (e instanceof SopsError && e.code === 'mac-mismatch') {
      throw new SopsError(
        'mac-mismatch',
        'sops.mac',
        'the MAC does not authenticate: sops.mac or sops.lastmodified was changed',
      );
    }
    throw e;
  }
  if (typeof stored !== 'string' || !sameText(stored, expected)) {
    throw new SopsError(
      'mac-mismatch',
      'sops.mac',
      'the values do not match the MAC: a plaintext field was changed, added, removed or reordered since encryption',
    );
  }
  return plain;
}

/**
 * Encrypts an object as `sops --encrypt --age …` would (same value format, AAD, MAC and metadata),
 * for tests and the demo; the agent never needs it.
 */
export async function encryptSopsObject(
  obj: Record<string, unknown>,
  options: EncryptOptions,
): Promise<Record<string, unknown>> {
  if (hasSopsBlock(obj))
    throw new SopsError('invalid-metadata', 'sops', 'the object is already SOPS-encrypted');
  if (options.recipients.length === 0)
    throw new SopsError('invalid-metadata', 'recipients', 'at least one age recipient is needed');
  const rule = encryptionRule(options);
  const macOnly = options.macOnlyEncrypted === true;
  const dataKey = randomBytes(32);
  const hash = createHash('sha512');
  if (macOnly) hash.update(MAC_ONLY_ENCRYPTED_SEED);
  const encrypted = walk(obj as Tree, [], '', undefined, (value, path, pointer) => {
    if (value === null || value === undefined) return value;
    const selected = isEncryptedPath(path, rule);
    if (selected || !macOnly) hash.update(leafBytes(value, pointer));
    if (!selected || value === '') return value;
    if (value instanceof Date) {
      throw new SopsError(
        'unsupported-value',
        displayPath(pointer),
        'dates cannot be encrypted; quote the value',
      );
    }
    return encryptValue(value, dataKey, `${path.join(':')}:`, displayPath(pointer));
  }) as Record<string, unknown>;
  const lastmodified = renderLastModified(options.lastModified ?? new Date());
  const mac = encryptValue(hash.digest('hex').toUpperCase(), dataKey, lastmodified, 'sops.mac');
  encrypted['sops'] = {
    age: await wrapDataKey(dataKey, options.recipients),
    lastmodified,
    mac,
    ...ruleToMetadata(rule),
    ...(macOnly ? { mac_only_encrypted: true } : {}),
    version: SOPS_FORMAT_VERSION,
  };
  return encrypted;
}

/**
 * The SOPS MAC depends on the order of map keys, which a JSON store may not keep (PostgreSQL
 * `jsonb` sorts them). Call this where the document is parsed from its source file (on the hub,
 * before storing a bundle): it records each map's key order in the `sops` block, under a field SOPS
 * itself ignores, and {@link decryptSopsObject} walks in that order. Objects without a `sops` block
 * are returned unchanged. Recording order needs no key and reveals nothing but key names.
 */
export function preserveSopsKeyOrder<T>(obj: T): T {
  if (!hasSopsBlock(obj)) return obj;
  const order: Record<string, string[]> = {};
  const visit = (node: unknown, pointer: string): void => {
    if (Array.isArray(node)) {
      node.forEach((item, i) => visit(item, `${pointer}/${i}`));
    } else if (isTree(node)) {
      const keys = Object.keys(node).filter((k) => pointer !== '' || k !== 'sops');
      if (keys.length > 1) order[pointer] = keys;
      for (const k of keys) visit(node[k], `${pointer}/${escapePointer(k)}`);
    }
  };
  visit(obj, '');
  return { ...obj, sops: { ...obj.sops, [KEY_ORDER_FIELD]: order } };
}

/** Checks the age identities once (e.g. at agent start) and returns their public recipients for logs. */
export async function ageRecipientsOf(identities: readonly string[]): Promise<string[]> {
  return recipientsOf(identities);
}

type LeafFn = (value: Exclude<Node, Node[] | Tree>, path: readonly string[], pointer: string) => Node;

/** Walks maps in their recorded (else own) key order; list items keep their parent's path, as in SOPS. */
function walk(
  node: Node,
  path: string[],
  pointer: string,
  order: Record<string, string[]> | undefined,
  leaf: LeafFn,
): Node {
  if (Array.isArray(node)) return node.map((item, i) => walk(item, path, `${pointer}/${i}`, order, leaf));
  if (!isTree(node)) return leaf(node, path, pointer);
  const out: Tree = {};
  for (const key of keysInOrder(node, order?.[pointer])) {
    // defineProperty keeps a "__proto__" key a plain field
    Object.defineProperty(out, key, {
      value: walk(node[key], [...path, key], `${pointer}/${escapePointer(key)}`, order, leaf),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return out;
}

function keysInOrder(node: Tree, recorded: string[] | undefined): string[] {
  const own = Object.keys(node);
  if (!recorded || recorded.length !== own.length) return own;
  const set = new Set(own);
  return recorded.every((k) => set.has(k)) && new Set(recorded).size === own.length ? recorded : own;
}

function isTree(node: unknown): node is Tree {
  return (
    typeof node === 'object' &&
    node !== null &&
    !Array.isArray(node) &&
    !(node instanceof Uint8Array) &&
    !(node instanceof Date)
  );
}

function leafBytes(value: Exclude<Node, Node[] | Tree | null | undefined>, pointer: string): Uint8Array {
  if (value instanceof Date) return Buffer.from(renderLastModified(value), 'utf8');
  if (typeof value === 'number' && !Number.isFinite(value)) {
    throw new SopsError('unsupported-value', displayPath(pointer), 'non-finite numbers have no SOPS form');
  }
  return macBytes(value);
}

function encryptionRule(o: EncryptOptions): SelectionRule {
  const set = (
    [
      ['encrypted_regex', o.encryptedRegex],
      ['unencrypted_regex', o.unencryptedRegex],
      ['encrypted_suffix', o.encryptedSuffix],
      ['unencrypted_suffix', o.unencryptedSuffix],
    ] as const
  ).filter(([, v]) => v !== undefined && v !== '');
  if (set.length > 1) {
    throw new SopsError(
      'invalid-metadata',
      set[1]?.[0] ?? '',
      `only one of ${set.map(([k]) => k).join(', ')} may be set`,
    );
  }
  const [kind, value] = set[0] ?? ['unencrypted_suffix', '_unencrypted'];
  if (kind === 'encrypted_regex' || kind === 'unencrypted_regex') {
    try {
      return { kind, value: new RegExp(value ?? '') };
    } catch (e) {
      throw new SopsError('invalid-metadata', kind, `invalid regular expression: ${(e as Error).message}`);
    }
  }
  return { kind, value: value ?? '' };
}

function sameText(a: string, b: string): boolean {
  const x = Buffer.from(a, 'utf8');
  const y = Buffer.from(b, 'utf8');
  return x.length === y.length && timingSafeEqual(x, y);
}

function escapePointer(key: string): string {
  return key.replace(/~/g, '~0').replace(/\//g, '~1');
}

/** `/stringData/key` → `stringData.key`, `/spec/items/0/value` → `spec.items[0].value`. */
function displayPath(pointer: string): string {
  return pointer
    .split('/')
    .slice(1)
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'))
    .reduce((acc, p) => (/^\d+$/.test(p) ? `${acc}[${p}]` : acc ? `${acc}.${p}` : p), '');
}
