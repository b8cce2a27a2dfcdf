// A sync-settings field checked: the error that names it, and the shape checks the fields of syncPolicy share.

/** Where an ApplicationSet declares the sync policy every target inherits. */
export const SYNC_POLICY_PATH = 'spec.template.spec.syncPolicy';

/** A template's sync settings are unusable; `path` names the field, e.g. `…ignoreDifferences[0].jsonPointers[1]`. */
export class SyncSettingsError extends Error {
  override readonly name = 'SyncSettingsError';
  constructor(
    message: string,
    readonly path: string,
    readonly code:
      'invalid-ignore-rule' | 'invalid-sync-policy' | 'unsupported-sync-option' = 'invalid-ignore-rule',
  ) {
    super(message);
  }
}

/** `raw` as an object with no key outside `known`; throws naming the first other one. */
export function objectWithKeys(
  raw: unknown,
  known: readonly string[],
  path: string,
): Record<string, unknown> {
  const o = asObject(raw);
  if (!o)
    throw new SyncSettingsError(`expected an object with ${known.join(', ')}`, path, 'invalid-sync-policy');
  for (const k of Object.keys(o))
    if (!known.includes(k))
      throw new SyncSettingsError(
        `unknown field "${k}" (known: ${known.join(', ')})`,
        `${path}.${k}`,
        'invalid-sync-policy',
      );
  return o;
}

/** `value` as a whole number of at least `min`; throws naming `path`. */
export function integerAtLeast(value: unknown, min: number, path: string): number {
  if (typeof value === 'number' && Number.isInteger(value) && value >= min) return value;
  throw new SyncSettingsError(
    `expected a whole number of at least ${min}, got ${JSON.stringify(value)}`,
    path,
    'invalid-sync-policy',
  );
}

/** A template expression is judged per target, once the generators filled it in. */
export function isTemplated(value: unknown): boolean {
  return typeof value === 'string' && value.includes('{{');
}

/** A setting that is not a boolean would otherwise fall back to its default without a word. */
export function checkBoolean(value: unknown, path: string): void {
  if (typeof value === 'boolean') return;
  if (isTemplated(value)) return;
  throw new SyncSettingsError(
    `expected true or false, got ${JSON.stringify(value)}`,
    path,
    'invalid-sync-policy',
  );
}

/** `v` as a plain object (not null, not a list), else undefined. */
export function asObject(v: unknown): Record<string, unknown> | undefined {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
    ? (v as Record<string, unknown>)
    : undefined;
}
