export { type HealthResult, type HealthStatus, HEALTH_ORDER, worstHealth } from './health-result.js';
export { type HealthAssessor, type HealthAssessorOptions, createHealthAssessor } from './health-assessor.js';
export { parseLuaRuleKey } from './lua/lua-rule-index.js';
