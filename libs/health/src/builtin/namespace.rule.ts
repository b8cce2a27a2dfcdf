import { str } from '../object-fields.js';
import { type BuiltinRule, result } from './rule.js';

/**
 * Argo CD has no Namespace check; Flotilla reports one because the agent creates namespaces and waits on them.
 * A namespace is usable once Active; Terminating ones are caught earlier by the pending-deletion rule.
 */
export const namespaceHealth: BuiltinRule = (obj) => {
  const phase = str(obj, 'status', 'phase');
  if (phase === 'Terminating') return result('Progressing', 'Namespace is terminating');
  return result('Healthy');
};
