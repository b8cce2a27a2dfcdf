// Argo CD's `ignoreDifferences`, checked the way the agent will use them.
import { ignoreRuleSchema, type IgnoreRule } from '@flotilla/contract';
import { compileIgnoreRules, DiffError } from '@flotilla/diff';
import { SyncSettingsError } from './sync-settings-fields.js';

/** Where an ApplicationSet declares the ignore rules every target inherits (Argo CD's Application field). */
export const IGNORE_DIFFERENCES_PATH = 'spec.template.spec.ignoreDifferences';

/**
 * Argo CD's `ignoreDifferences`, checked the way the agent will use them: the contract's shape,
 * then every JSON pointer and jq expression compiled. Throws SyncSettingsError naming the field.
 */
export function ignoreRulesOf(raw: unknown, path = IGNORE_DIFFERENCES_PATH): IgnoreRule[] {
  if (raw === undefined || raw === null) return [];
  if (!Array.isArray(raw)) throw new SyncSettingsError('ignoreDifferences must be a list of rules', path);
  return raw.map((rule, i) => ignoreRuleOf(rule, `${path}[${i}]`));
}

/** One ignore rule checked and compiled; `at` is its field, e.g. `…ignoreDifferences[0]`. */
export function ignoreRuleOf(raw: unknown, at: string): IgnoreRule {
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

function fieldPath(segments: readonly PropertyKey[]): string {
  return segments.map((s) => (typeof s === 'number' ? `[${s}]` : `.${String(s)}`)).join('');
}
