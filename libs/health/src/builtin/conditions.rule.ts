import { conditions, field, findCondition, int } from '../object-fields.js';
import { type BuiltinRule, result } from './rule.js';

/**
 * The status-conditions convention of kstatus (`Ready`, `Reconciling`, `Stalled`, `observedGeneration`), in Argo
 * CD's vocabulary: InProgress → Progressing, Failed → Degraded, Current → Healthy. Flux-style `spec.suspend`
 * reads as Suspended.
 */
export const conditionsHealth: BuiltinRule = (obj) => {
  if (field(obj, 'spec', 'suspend') === true) return result('Suspended', 'Reconciliation is suspended');
  const observed = field(obj, 'status', 'observedGeneration');
  if (typeof observed === 'number' && observed !== int(obj, 'metadata', 'generation')) {
    return result('Progressing', 'Waiting for the latest generation to be observed');
  }
  const all = conditions(obj);
  const stalled = findCondition(all, 'Stalled');
  if (stalled?.status === 'True') return result('Degraded', stalled.message);
  const reconciling = findCondition(all, 'Reconciling');
  if (reconciling?.status === 'True') return result('Progressing', reconciling.message);
  const ready = findCondition(all, 'Ready');
  if (!ready) return result('Healthy');
  return result(ready.status === 'True' ? 'Healthy' : 'Progressing', ready.message);
};
