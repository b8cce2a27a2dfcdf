import { conditions, field } from '../object-fields.js';
import { type BuiltinRule, result } from './rule.js';

/**
 * Argo CD ships this check as `resource_customizations/policy/PodDisruptionBudget/health.lua`. Too few pods
 * (`InsufficientPods`) has valid uses, so only other false conditions degrade the budget.
 */
export const podDisruptionBudgetHealth: BuiltinRule = (obj) => {
  let verdict = result('Progressing', 'Waiting for status');
  if (field(obj, 'status') === undefined || field(obj, 'status') === null) return verdict;
  for (const condition of conditions(obj)) {
    if (condition.status === 'False' && condition.reason !== 'InsufficientPods') {
      return result('Degraded', `PodDisruptionBudget has ${condition.reason}`);
    }
    verdict = result('Healthy', `PodDisruptionBudget has ${condition.reason}`);
  }
  return verdict;
};
