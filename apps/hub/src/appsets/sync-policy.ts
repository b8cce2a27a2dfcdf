import { ignoreRuleSchema, syncPolicySchema, type IgnoreRule, type SyncPolicy } from '@flotilla/contract';
import { compileIgnoreRules, DiffError } from '@flotilla/diff';
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
      return syncPolicySchema.parse({ ...respectIgnoreDifferencesOf(o), ...pickBooleans(o) });
    }
    if (automated === undefined) {
      return {
        ...syncPolicySchema.parse(respectIgnoreDifferencesOf(o)),
        automated: false,
        selfHeal: false,
      };
    }
    return syncPolicySchema.parse({ ...respectIgnoreDifferencesOf(o), ...pickBooleans(o) });
  }
  const a = typeof automated === 'object' && automated !== null ? (automated as Record<string, unknown>) : {};
  // Argo CD's own defaults inside `automated`: nothing is pruned or healed unless asked.
  return syncPolicySchema.parse({
    automated: true,
    prune: false,
    selfHeal: false,
    allowEmpty: false,
    ...respectIgnoreDifferencesOf(o),
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
  readonly code = 'invalid-ignore-rule';
  constructor(
    message: string,
    readonly path: string,
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
    if (typeof raw === 'string' && raw.includes('{{')) return;
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

/** `syncOptions` is a list of `Key=Value` strings; only RespectIgnoreDifferences is read, the rest kept for Argo CD. */
function checkSyncOptions(syncPolicy: unknown): void {
  if (syncPolicy === null || typeof syncPolicy !== 'object' || Array.isArray(syncPolicy)) return;
  const options = (syncPolicy as Record<string, unknown>)['syncOptions'];
  if (options === undefined || options === null) return;
  const at = 'spec.template.spec.syncPolicy.syncOptions';
  if (!Array.isArray(options))
    throw new SyncSettingsError('syncOptions must be a list of "Key=Value" strings', at);
  options.forEach((o, i) => {
    if (typeof o !== 'string' || !o.includes('=')) {
      throw new SyncSettingsError(`${JSON.stringify(o)} is not a "Key=Value" sync option`, `${at}[${i}]`);
    }
  });
}

function respectIgnoreDifferencesOf(o: Record<string, unknown>): Partial<SyncPolicy> {
  const options = o['syncOptions'];
  if (!Array.isArray(options)) return {};
  for (const opt of options) {
    if (typeof opt !== 'string') continue;
    const [key, value] = opt.split('=', 2);
    if (key?.trim() === 'RespectIgnoreDifferences')
      return { respectIgnoreDifferences: value?.trim() === 'true' };
  }
  return {};
}

function fieldPath(segments: readonly PropertyKey[]): string {
  return segments.map((s) => (typeof s === 'number' ? `[${s}]` : `.${String(s)}`)).join('');
}

function asObject(v: unknown): Record<string, unknown> | undefined {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
    ? (v as Record<string, unknown>)
    : undefined;
}
