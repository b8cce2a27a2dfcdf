// A template's sync settings checked — the literal ones at submission, each target's at expansion — and what a target stores of them.
import { readOptions, SyncOptionError, TARGET_SYNC_OPTIONS } from '@flotilla/contract';
import { HubError } from '../common/hub-error.js';
import { ignoreRuleOf, ignoreRulesOf, IGNORE_DIFFERENCES_PATH } from './ignore-rules.js';
import { parseRetryPolicy } from './retry-policy.js';
import { sharedSettingsOf, syncPolicyOf, type StoredSyncPolicy } from './sync-policy.js';
import {
  asObject,
  checkBoolean,
  isTemplated,
  SYNC_POLICY_PATH,
  SyncSettingsError,
} from './sync-settings-fields.js';

/** The agent-facing settings of one rendered Application (`spec.syncPolicy`, `spec.ignoreDifferences`). */
export function targetSyncSettingsOf(appSpec: {
  syncPolicy?: unknown;
  ignoreDifferences?: unknown;
}): StoredSyncPolicy {
  const rules = ignoreRulesOf(appSpec.ignoreDifferences);
  checkSyncOptions(appSpec.syncPolicy);
  const policy = syncPolicyOf(appSpec.syncPolicy);
  return rules.length > 0 ? { ...policy, ignoreDifferences: rules } : policy;
}

/** checkSyncSettingsSpec as the API answers it: 400 naming the field, nothing stored. */
export function checkIgnoreRulesSpec(document: unknown): void {
  try {
    checkSyncSettingsSpec(document);
  } catch (e) {
    if (e instanceof SyncSettingsError) throw new HubError(400, e.code, e.message, e.path);
    throw e;
  }
}

/**
 * At submission: the template's rules that hold no template expression, checked now, so a typo is
 * refused before anything is stored. Templated rules are checked per target when expanded.
 */
export function checkSyncSettingsSpec(document: unknown): void {
  const spec = asObject(asObject(asObject(asObject(document)?.['spec'])?.['template'])?.['spec']);
  if (!spec) return;
  checkSyncOptions(spec['syncPolicy']);
  const raw = spec['ignoreDifferences'];
  if (raw === undefined || raw === null) return;
  if (!Array.isArray(raw)) {
    if (isTemplated(raw)) return;
    throw new SyncSettingsError('ignoreDifferences must be a list of rules', IGNORE_DIFFERENCES_PATH);
  }
  raw.forEach((rule, i) => {
    if (!JSON.stringify(rule).includes('{{')) ignoreRuleOf(rule, `${IGNORE_DIFFERENCES_PATH}[${i}]`);
  });
}

/** Argo CD's and Flotilla's keys of an Application's `syncPolicy`, with what is done with each. */
const SYNC_POLICY_KEYS: Readonly<Record<string, string | null>> = {
  automated: null,
  syncOptions: null,
  // Flotilla's flat form.
  selfHeal: null,
  prune: null,
  allowEmpty: null,
  respectIgnoreDifferences: null,
  retry: null,
  managedNamespaceMetadata: null,
};
const AUTOMATED_KEYS = new Set(['prune', 'selfHeal', 'allowEmpty', 'enabled']);

/**
 * Every key of `syncPolicy`, of `automated` and every `syncOptions` entry is one Flotilla honours
 * (libs/contract sync-options has the table): anything else is refused, naming the field, never
 * accepted and ignored.
 */
function checkSyncOptions(syncPolicy: unknown): void {
  if (syncPolicy === undefined || syncPolicy === null) return;
  if (isTemplated(syncPolicy)) return;
  const policy = asObject(syncPolicy);
  if (!policy)
    throw new SyncSettingsError('syncPolicy must be an object', SYNC_POLICY_PATH, 'invalid-sync-policy');
  for (const [key, value] of Object.entries(policy)) {
    if (!Object.hasOwn(SYNC_POLICY_KEYS, key))
      throw new SyncSettingsError(
        `unknown syncPolicy field "${key}" (known: ${Object.keys(SYNC_POLICY_KEYS).join(', ')})`,
        `${SYNC_POLICY_PATH}.${key}`,
        'invalid-sync-policy',
      );
    const refused = SYNC_POLICY_KEYS[key];
    if (refused)
      throw new SyncSettingsError(refused, `${SYNC_POLICY_PATH}.${key}`, 'unsupported-sync-option');
    if (key === 'automated' && value !== null && typeof value === 'object' && !Array.isArray(value)) {
      for (const [k, v] of Object.entries(value)) {
        if (!AUTOMATED_KEYS.has(k))
          throw new SyncSettingsError(
            `unknown automated field "${k}" (known: ${[...AUTOMATED_KEYS].join(', ')})`,
            `${SYNC_POLICY_PATH}.automated.${k}`,
            'invalid-sync-policy',
          );
        checkBoolean(v, `${SYNC_POLICY_PATH}.automated.${k}`);
      }
    } else if (key === 'managedNamespaceMetadata') checkNamespaceMetadata(policy);
    else if (key === 'retry') parseRetryPolicy(value);
    else if (key !== 'syncOptions' && value !== null) checkBoolean(value, `${SYNC_POLICY_PATH}.${key}`);
  }
  const options = policy['syncOptions'];
  if (options === undefined || options === null) return;
  const at = `${SYNC_POLICY_PATH}.syncOptions`;
  if (!Array.isArray(options))
    throw new SyncSettingsError(
      'syncOptions must be a list of "Key=Value" strings',
      at,
      'invalid-sync-policy',
    );
  try {
    // A templated entry is checked per target, once expanded.
    readOptions(options as unknown[], TARGET_SYNC_OPTIONS, at, isTemplated);
  } catch (e) {
    if (e instanceof SyncOptionError) throw new SyncSettingsError(e.message, e.path, e.code);
    throw e;
  }
}

/** Labels and annotations for the namespace CreateNamespace=true makes: string maps, and only with that option. */
function checkNamespaceMetadata(policy: Record<string, unknown>): void {
  const at = `${SYNC_POLICY_PATH}.managedNamespaceMetadata`;
  const raw = policy['managedNamespaceMetadata'];
  if (raw === null || isTemplated(raw)) return;
  const meta = asObject(raw);
  if (!meta)
    throw new SyncSettingsError('expected an object with labels and annotations', at, 'invalid-sync-policy');
  for (const [k, v] of Object.entries(meta)) {
    if (k !== 'labels' && k !== 'annotations')
      throw new SyncSettingsError(
        `unknown field "${k}" (known: labels, annotations)`,
        `${at}.${k}`,
        'invalid-sync-policy',
      );
    if (v === null || v === undefined) continue;
    const map = asObject(v);
    if (!map) throw new SyncSettingsError('expected a map of strings', `${at}.${k}`, 'invalid-sync-policy');
    for (const [name, value] of Object.entries(map))
      if (typeof value !== 'string')
        throw new SyncSettingsError(
          `expected a string, got ${JSON.stringify(value)}`,
          `${at}.${k}.${name}`,
          'invalid-sync-policy',
        );
  }
  // A templated option may turn out to be CreateNamespace=true: that is checked once expanded.
  const options = policy['syncOptions'];
  const templated = Array.isArray(options) && options.some(isTemplated);
  const creates = templated || sharedSettingsOf(policy).createNamespace === true;
  if (!creates)
    throw new SyncSettingsError(
      'managedNamespaceMetadata is used only with the sync option CreateNamespace=true, which is not set',
      at,
      'invalid-sync-policy',
    );
}
