import {
  checkHealthRules,
  HEALTH_RULE_FILE,
  healthRuleKeyOf,
  type CheckedHealthRule,
} from '@flotilla/health';
import { compareFleetErrors, type FleetError } from './fleet-error.js';
import { type FleetFile } from './fleet-file.js';

/**
 * The directory of a fleet repository holding custom health checks, named and laid out as Argo CD's
 * own (`<group>/<kind>/health.lua`), so its public library can be copied in as it is.
 */
export const HEALTH_RULES_DIR = 'resource_customizations';

/** A fleet repository's health rule: its key, the file it came from and its Lua source. */
export type FleetHealthRule = CheckedHealthRule;

/** The part of `path` inside the first resource_customizations directory, or null outside one. */
function insideRulesDir(path: string): string | null {
  const segments = path.split('/');
  const at = segments.indexOf(HEALTH_RULES_DIR);
  return at < 0 ? null : segments.slice(at + 1).join('/');
}

/** Whether a path is under a resource_customizations directory (never a fleet object, whatever it holds). */
export function isInHealthRulesDir(path: string): boolean {
  return insideRulesDir(path) !== null;
}

/**
 * Whether the hub reads a file as a health rule: a `health.lua` under resource_customizations, outside
 * hidden directories. Argo CD's actions and test data beside it are ignored.
 */
export function isHealthRuleFile(path: string): boolean {
  const inside = insideRulesDir(path);
  return (
    inside !== null &&
    (inside === HEALTH_RULE_FILE || inside.endsWith(`/${HEALTH_RULE_FILE}`)) &&
    !path.split('/').some((segment) => segment.startsWith('.'))
  );
}

/**
 * Checks the health rules of a fleet repository (files isHealthRuleFile picked): each at a rule's
 * place, within the size cap, compiling as Lua. Never runs a script. As for objects, any error makes
 * the whole commit invalid; errors name the file, with kind HealthRule and the rule's key.
 */
export async function validateFleetHealthRules(
  files: readonly FleetFile[],
): Promise<{ rules: FleetHealthRule[]; errors: FleetError[] }> {
  const ruleFiles = files.flatMap((f) => {
    const relativePath = isHealthRuleFile(f.path) ? insideRulesDir(f.path) : null;
    return relativePath === null ? [] : [{ file: f.path, relativePath, content: f.content }];
  });
  const { rules, problems } = await checkHealthRules(ruleFiles);
  const keyOf = new Map(
    ruleFiles.map((f) => {
      const place = healthRuleKeyOf(f.relativePath);
      return [f.file, 'key' in place ? place.key : null] as const;
    }),
  );
  const errors = problems.map((p): FleetError => ({
    code: p.code,
    file: p.file,
    document: 0,
    line: p.line ?? 1,
    kind: 'HealthRule',
    name: keyOf.get(p.file) ?? null,
    path: '(root)',
    message: p.message,
  }));
  return { rules, errors: errors.sort(compareFleetErrors) };
}
