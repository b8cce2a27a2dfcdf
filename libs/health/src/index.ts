export { type HealthResult, type HealthStatus, HEALTH_ORDER, worstHealth } from './health-result.js';
export { type HealthAssessor, type HealthAssessorOptions, createHealthAssessor } from './health-assessor.js';
export { parseLuaRuleKey } from './lua/lua-rule-index.js';
export {
  HEALTH_RULE_FILE,
  HEALTH_RULE_MAX_BYTES,
  HEALTH_RULES_MAX,
  checkHealthRules,
  healthRuleKeyOf,
  type CheckedHealthRule,
  type HealthRuleFile,
  type HealthRuleProblem,
  type HealthRuleProblemCode,
} from './lua/health-rule-files.js';
