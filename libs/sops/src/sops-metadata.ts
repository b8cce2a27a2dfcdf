import { z } from 'zod';
import { SopsError } from './sops-error.js';

/** The parts of a document's `sops` block that decryption needs. */
export interface SopsMetadata {
  age: { recipient: string; enc: string }[];
  /** Key sources present in the file that the agent cannot use (`pgp`, `kms`, …), for error messages. */
  otherKeySources: string[];
  lastModified: string;
  mac: string;
  rule: SelectionRule;
  macOnlyEncrypted: boolean;
  /** Original map key order recorded by {@link preserveSopsKeyOrder}, keyed by JSON pointer. */
  keyOrder?: Record<string, string[]>;
}

/** Which leaves are encrypted; at most one rule per file, SOPS' default is `unencrypted_suffix: _unencrypted`. */
export type SelectionRule =
  | { kind: 'unencrypted_suffix'; value: string }
  | { kind: 'encrypted_suffix'; value: string }
  | { kind: 'unencrypted_regex'; value: RegExp }
  | { kind: 'encrypted_regex'; value: RegExp };

export const DEFAULT_UNENCRYPTED_SUFFIX = '_unencrypted';
/** Not a SOPS field: the agent-side record of key order, see preserveSopsKeyOrder. */
export const KEY_ORDER_FIELD = 'flotilla_key_order';

const OTHER_KEY_SOURCES = ['pgp', 'kms', 'gcp_kms', 'azure_kv', 'hc_vault', 'hckms'] as const;
const RULE_FIELDS = [
  'unencrypted_suffix',
  'encrypted_suffix',
  'unencrypted_regex',
  'encrypted_regex',
] as const;
const COMMENT_RULES = ['unencrypted_comment_regex', 'encrypted_comment_regex'] as const;

const metadataSchema = z.looseObject({
  age: z
    .array(z.looseObject({ recipient: z.string(), enc: z.string() }))
    .nullish()
    .transform((v) => v ?? []),
  lastmodified: z.union([z.string(), z.date()]),
  mac: z.string().min(1),
  mac_only_encrypted: z.union([z.boolean(), z.string()]).nullish(),
  key_groups: z.array(z.unknown()).nullish(),
  unencrypted_suffix: z.string().nullish(),
  encrypted_suffix: z.string().nullish(),
  unencrypted_regex: z.string().nullish(),
  encrypted_regex: z.string().nullish(),
  [KEY_ORDER_FIELD]: z.record(z.string(), z.array(z.string())).optional(),
});

export function hasSopsBlock(obj: unknown): obj is { sops: Record<string, unknown> } {
  if (typeof obj !== 'object' || obj === null || Array.isArray(obj)) return false;
  const sops = (obj as Record<string, unknown>)['sops'];
  return (
    typeof sops === 'object' &&
    sops !== null &&
    !Array.isArray(sops) &&
    ('mac' in sops || 'lastmodified' in sops)
  );
}

export function parseSopsMetadata(block: unknown): SopsMetadata {
  const parsed = metadataSchema.safeParse(block);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = ['sops', ...(issue?.path ?? []).map(String)].join('.');
    throw new SopsError('invalid-metadata', where, issue?.message ?? 'invalid sops metadata');
  }
  const m = parsed.data;
  const raw = block as Record<string, unknown>;
  const otherKeySources = OTHER_KEY_SOURCES.filter(
    (k) => Array.isArray(raw[k]) && (raw[k] as unknown[]).length > 0,
  );
  if (m.key_groups && m.key_groups.length > 0) {
    throw new SopsError(
      'unsupported-key-type',
      'sops.key_groups',
      'files split across key groups (Shamir secret sharing) are not supported; re-encrypt with plain age recipients',
    );
  }
  for (const field of COMMENT_RULES) {
    if (typeof raw[field] === 'string' && raw[field] !== '') {
      throw new SopsError(
        'invalid-metadata',
        `sops.${field}`,
        `${field} selects values by YAML comment, which a parsed manifest no longer has; use encrypted_regex or a suffix`,
      );
    }
  }
  const present = RULE_FIELDS.filter((f) => typeof m[f] === 'string' && m[f] !== '');
  if (present.length > 1) {
    throw new SopsError(
      'invalid-metadata',
      `sops.${present[1]}`,
      `only one of ${present.join(', ')} may be set`,
    );
  }
  const lastModified = renderLastModified(m.lastmodified);
  return {
    age: m.age.map(({ recipient, enc }) => ({ recipient, enc })),
    otherKeySources,
    lastModified,
    mac: m.mac,
    rule: selectionRule(present[0], m),
    macOnlyEncrypted: m.mac_only_encrypted === true || m.mac_only_encrypted === 'true',
    ...(m[KEY_ORDER_FIELD] ? { keyOrder: m[KEY_ORDER_FIELD] } : {}),
  };
}

function selectionRule(
  field: (typeof RULE_FIELDS)[number] | undefined,
  m: z.infer<typeof metadataSchema>,
): SelectionRule {
  switch (field) {
    case undefined:
      return { kind: 'unencrypted_suffix', value: DEFAULT_UNENCRYPTED_SUFFIX };
    case 'unencrypted_suffix':
    case 'encrypted_suffix':
      return { kind: field, value: m[field] ?? '' };
    case 'unencrypted_regex':
    case 'encrypted_regex':
      try {
        return { kind: field, value: new RegExp(m[field] ?? '') };
      } catch (e) {
        throw new SopsError(
          'invalid-metadata',
          `sops.${field}`,
          `invalid regular expression: ${(e as Error).message}`,
        );
      }
  }
}

/**
 * The MAC's additional data is `lastmodified` as Go renders RFC 3339 after parsing it: no
 * fractional seconds, `Z` for a zero offset, `±hh:mm` otherwise.
 */
export function renderLastModified(value: string | Date): string {
  if (value instanceof Date) {
    if (Number.isNaN(value.getTime()))
      throw new SopsError('invalid-metadata', 'sops.lastmodified', 'invalid date');
    return value.toISOString().replace(/\.\d+Z$/, 'Z');
  }
  const m = /^(\d{4}-\d{2}-\d{2})[Tt](\d{2}:\d{2}:\d{2})(?:\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/.exec(value);
  if (!m) throw new SopsError('invalid-metadata', 'sops.lastmodified', `"${value}" is not an RFC 3339 time`);
  const [, date = '', time = '', zone = ''] = m;
  const offset = /^[Zz]$|^[+-]00:00$/.test(zone) ? 'Z' : zone;
  return `${date}T${time}${offset}`;
}

/** SOPS' `shouldBeEncrypted`: decided from every map key on the path (list items add none). */
export function isEncryptedPath(path: readonly string[], rule: SelectionRule): boolean {
  switch (rule.kind) {
    case 'unencrypted_suffix':
      return !path.some((p) => p.endsWith(rule.value));
    case 'encrypted_suffix':
      return path.some((p) => p.endsWith(rule.value));
    case 'unencrypted_regex':
      return !path.some((p) => rule.value.test(p));
    case 'encrypted_regex':
      return path.some((p) => rule.value.test(p));
  }
}

export function ruleToMetadata(rule: SelectionRule): Record<string, string> {
  return { [rule.kind]: typeof rule.value === 'string' ? rule.value : rule.value.source };
}
