import {
  DEFAULT_RETRY_POLICY,
  ignoreRuleSchema,
  readOptions,
  SyncOptionError,
  syncPolicySchema,
  TARGET_SYNC_OPTIONS,
  type IgnoreRule,
  type RetryPolicy,
  type SyncPolicy,
} from '@flotilla/contract';
import { compileIgnoreRules, DiffError } from '@flotilla/diff';
import { parseGoDuration } from '@flotilla/windows';
import { z } from 'zod';
import { HubError } from '../common/hub-error.js';

/**
 * The agent's sync policy from an Application's `syncPolicy`, in either form:
 * Argo CD's (`automated: {prune, selfHeal, allowEmpty}`, each false unless set; no `automated` = manual)
 * or Flotilla's flat booleans. With no syncPolicy at all Flotilla's defaults apply (automated, self-heal, prune):
 * a pull agent that waits for a person would defeat the point. `syncOptions: ["RespectIgnoreDifferences=true"]`
 * (Argo CD's spelling, beside `automated`) sets `respectIgnoreDifferences`.
 */
export function syncPolicyOf(raw: unknown): SyncPolicy {
  if (raw === undefined || raw === null) return syncPolicySchema.parse({});
  if (typeof raw !== 'object' || Array.isArray(raw)) return syncPolicySchema.parse({});
  const o = raw as Record<string, unknown>;
  const automated = o['automated'];
  if (typeof automated === 'boolean' || automated === undefined) {
    if (automated === undefined && ('selfHeal' in o || 'prune' in o || 'allowEmpty' in o)) {
      return syncPolicySchema.parse({ ...sharedSettingsOf(o), ...pickBooleans(o) });
    }
    if (automated === undefined) {
      return {
        ...syncPolicySchema.parse(sharedSettingsOf(o)),
        automated: false,
        selfHeal: false,
      };
    }
    return syncPolicySchema.parse({ ...sharedSettingsOf(o), ...pickBooleans(o) });
  }
  const a = typeof automated === 'object' && automated !== null ? (automated as Record<string, unknown>) : {};
  // Argo CD's `automated.enabled: false` switches automated sync off and keeps the rest written down.
  if (a['enabled'] === false)
    return syncPolicySchema.parse({
      prune: a['prune'] === true,
      allowEmpty: a['allowEmpty'] === true,
      ...sharedSettingsOf(o),
      automated: false,
      selfHeal: false,
    });
  // Argo CD's own defaults inside `automated`: nothing is pruned or healed unless asked.
  return syncPolicySchema.parse({
    automated: true,
    prune: false,
    selfHeal: false,
    allowEmpty: false,
    ...sharedSettingsOf(o),
    ...pickBooleans(a),
  });
}

function pickBooleans(o: Record<string, unknown>): Partial<SyncPolicy> {
  const out: Partial<SyncPolicy> = {};
  for (const k of ['automated', 'selfHeal', 'prune', 'allowEmpty', 'respectIgnoreDifferences'] as const) {
    if (typeof o[k] === 'boolean') out[k] = o[k];
  }
  return out;
}

/** Where an ApplicationSet declares the ignore rules every target inherits (Argo CD's Application field). */
export const IGNORE_DIFFERENCES_PATH = 'spec.template.spec.ignoreDifferences';

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

/**
 * What `Target.syncPolicy` stores: the agent's sync policy and, when there are any, the ignore rules
 * its drift detection and `respectIgnoreDifferences` use. Kept in one JSON column because both come
 * from the same rendered Application and travel together in the assignment; a target without rules
 * stores exactly the policy, as before.
 */
export type StoredSyncPolicy = SyncPolicy & { ignoreDifferences?: IgnoreRule[] };

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

/** Splits a stored `Target.syncPolicy` back into the assignment's two fields. */
export function assignmentSyncSettingsOf(stored: unknown): {
  syncPolicy: SyncPolicy;
  ignoreDifferences: IgnoreRule[];
} {
  const o = stored !== null && typeof stored === 'object' && !Array.isArray(stored) ? stored : {};
  const rules = (o as { ignoreDifferences?: unknown }).ignoreDifferences;
  return {
    // The contract's schema drops the rules (unknown key) from the policy itself.
    syncPolicy: syncPolicySchema.parse(o),
    ignoreDifferences: rules === undefined ? [] : z.array(ignoreRuleSchema).parse(rules),
  };
}

/**
 * Argo CD's `ignoreDifferences`, checked the way the agent will use them: the contract's shape,
 * then every JSON pointer and jq expression compiled. Throws SyncSettingsError naming the field.
 */
export function ignoreRulesOf(raw: unknown, path = IGNORE_DIFFERENCES_PATH): IgnoreRule[] {
  if (raw === undefined || raw === null) return [];
  if (!Array.isArray(raw)) throw new SyncSettingsError('ignoreDifferences must be a list of rules', path);
  return raw.map((rule, i) => ignoreRuleOf(rule, `${path}[${i}]`));
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

function ignoreRuleOf(raw: unknown, at: string): IgnoreRule {
  const parsed = ignoreRuleSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new SyncSettingsError(
      `invalid ignore rule: ${issue?.message ?? 'invalid'}`,
      at + fieldPath(issue?.path ?? []),
    );
  }
  try {
    compileIgnoreRules([parsed.data]);
  } catch (e) {
    // The diff names `ignoreRules[0]…`; the author wrote `…ignoreDifferences[i]…`.
    if (e instanceof DiffError) {
      const field = e.path.replace(/^ignoreRules\[0\]/, '');
      throw new SyncSettingsError(e.message.slice(e.path.length + 2), at + field);
    }
    throw e;
  }
  return parsed.data;
}

const SYNC_POLICY_PATH = 'spec.template.spec.syncPolicy';

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

const RETRY_PATH = `${SYNC_POLICY_PATH}.retry`;
const RETRY_KEYS = ['limit', 'backoff', 'refresh'];
const BACKOFF_KEYS = ['duration', 'factor', 'maxDuration'];

/**
 * Argo CD's `syncPolicy.retry` with its defaults for what is left out (limit: Flotilla's 5, as the
 * ApplicationSet controller gives; backoff 5s × 2, at most 3m). Durations are Go durations (`30s`,
 * `1m30s`) or plain seconds, as Argo CD reads them. Throws SyncSettingsError naming the field;
 * undefined when no retry is written. A templated field is judged once expanded.
 */
export function parseRetryPolicy(raw: unknown): RetryPolicy | undefined {
  if (raw === undefined || raw === null || isTemplated(raw)) return undefined;
  const retry = objectWithKeys(raw, RETRY_KEYS, RETRY_PATH);
  const refresh = retry['refresh'];
  if (refresh !== undefined && refresh !== null) {
    checkBoolean(refresh, `${RETRY_PATH}.refresh`);
    if (refresh === false)
      throw new SyncSettingsError(
        'retry.refresh: false is not supported: a retry always syncs the newest revision Git has for the target (refresh: true)',
        `${RETRY_PATH}.refresh`,
        'unsupported-sync-option',
      );
  }
  const defaults = DEFAULT_RETRY_POLICY.backoff;
  const backoffRaw = retry['backoff'];
  const backoff =
    backoffRaw === undefined || backoffRaw === null || isTemplated(backoffRaw)
      ? {}
      : objectWithKeys(backoffRaw, BACKOFF_KEYS, `${RETRY_PATH}.backoff`);
  const limit = retry['limit'];
  const factor = backoff['factor'];
  return {
    limit:
      limit === undefined || limit === null || isTemplated(limit)
        ? DEFAULT_RETRY_POLICY.limit
        : integerAtLeast(limit, -1, `${RETRY_PATH}.limit`),
    backoff: {
      durationMs: durationMsOf(backoff['duration'], defaults.durationMs, `${RETRY_PATH}.backoff.duration`),
      factor:
        factor === undefined || factor === null || isTemplated(factor)
          ? defaults.factor
          : integerAtLeast(factor, 1, `${RETRY_PATH}.backoff.factor`),
      maxDurationMs: durationMsOf(
        backoff['maxDuration'],
        defaults.maxDurationMs,
        `${RETRY_PATH}.backoff.maxDuration`,
      ),
    },
  };
}

function objectWithKeys(raw: unknown, known: readonly string[], path: string): Record<string, unknown> {
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

function integerAtLeast(value: unknown, min: number, path: string): number {
  if (typeof value === 'number' && Number.isInteger(value) && value >= min) return value;
  throw new SyncSettingsError(
    `expected a whole number of at least ${min}, got ${JSON.stringify(value)}`,
    path,
    'invalid-sync-policy',
  );
}

/** A Go duration (`5s`, `1m30s`) or plain seconds (`5`, "5"), as Argo CD's retry reads it; > 0. */
function durationMsOf(value: unknown, fallback: number, path: string): number {
  if (value === undefined || value === null || isTemplated(value)) return fallback;
  let ms: number | undefined;
  if (typeof value === 'number') ms = value * 1_000;
  else if (typeof value === 'string' && /^\d+$/.test(value.trim())) ms = Number(value.trim()) * 1_000;
  else if (typeof value === 'string') {
    try {
      ms = parseGoDuration(value.trim());
    } catch (e) {
      throw new SyncSettingsError((e as Error).message, path, 'invalid-sync-policy');
    }
  }
  if (ms === undefined || !Number.isFinite(ms) || ms <= 0)
    throw new SyncSettingsError(
      `expected a duration above zero such as "5s", "2m" or a number of seconds, got ${JSON.stringify(value)}`,
      path,
      'invalid-sync-policy',
    );
  return ms;
}

function isTemplated(value: unknown): boolean {
  return typeof value === 'string' && value.includes('{{');
}

/** A setting that is not a boolean would otherwise fall back to its default without a word. */
function checkBoolean(value: unknown, path: string): void {
  if (typeof value === 'boolean') return;
  if (isTemplated(value)) return;
  throw new SyncSettingsError(
    `expected true or false, got ${JSON.stringify(value)}`,
    path,
    'invalid-sync-policy',
  );
}

/** What every form of `syncPolicy` reads alike: `syncOptions`, `managedNamespaceMetadata`, `retry`. */
/**
 * Sync options for one requested run (`Key=Value`, the appset's own table): checked as an appset's
 * are (unknown, malformed and refused entries throw SyncOptionError naming `path[i]`), and read into
 * the settings that override the appset's for that run.
 */
export function runSyncSettingsOf(options: readonly string[], path: string): Partial<SyncPolicy> {
  readOptions(options, TARGET_SYNC_OPTIONS, path);
  const out = sharedSettingsOf({ syncOptions: options });
  delete out.retry;
  delete out.managedNamespaceMetadata;
  return out;
}

function sharedSettingsOf(o: Record<string, unknown>): Partial<SyncPolicy> {
  const out: Partial<SyncPolicy> = {};
  const retry = parseRetryPolicy(o['retry']);
  if (retry) out.retry = retry;
  const options = o['syncOptions'];
  if (Array.isArray(options))
    for (const opt of options) {
      if (typeof opt !== 'string') continue;
      const [key, value] = opt.split('=', 2).map((x) => x.trim());
      if (key === 'RespectIgnoreDifferences') out.respectIgnoreDifferences = value === 'true';
      if (key === 'CreateNamespace') out.createNamespace = value === 'true';
      if (key === 'ApplyOutOfSyncOnly') out.applyOutOfSyncOnly = value === 'true';
      if (key === 'FailOnSharedResource') out.failOnSharedResource = value === 'true';
      if (key === 'Replace') out.replace = value === 'true';
      if (key === 'Force') out.force = value === 'true';
      if (key === 'PruneLast') out.pruneLast = value === 'true';
      if (key === 'Validate') out.validate = value === 'true';
      if (key === 'ServerSideApply') out.serverSideApply = value === 'true';
      if (
        key === 'PrunePropagationPolicy' &&
        (value === 'foreground' || value === 'background' || value === 'orphan')
      )
        out.prunePropagationPolicy = value;
    }
  const meta = asObject(o['managedNamespaceMetadata']);
  if (out.createNamespace && meta)
    out.managedNamespaceMetadata = {
      labels: stringMap(meta['labels']),
      annotations: stringMap(meta['annotations']),
    };
  return out;
}

function stringMap(v: unknown): Record<string, string> {
  return Object.fromEntries(
    Object.entries(asObject(v) ?? {}).filter((e): e is [string, string] => typeof e[1] === 'string'),
  );
}

function fieldPath(segments: readonly PropertyKey[]): string {
  return segments.map((s) => (typeof s === 'number' ? `[${s}]` : `.${String(s)}`)).join('');
}

function asObject(v: unknown): Record<string, unknown> | undefined {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
    ? (v as Record<string, unknown>)
    : undefined;
}
