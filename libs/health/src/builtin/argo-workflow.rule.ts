import { str } from '../object-fields.js';
import { type BuiltinRule, result } from './rule.js';

/** Argo Workflows' `Workflow`: only `status.phase` and `status.message` matter, whatever the version. */
export const argoWorkflowHealth: BuiltinRule = (obj) => {
  const message = str(obj, 'status', 'message');
  switch (str(obj, 'status', 'phase')) {
    case '':
    case 'Pending':
    case 'Running':
      return result('Progressing', message);
    case 'Succeeded':
      return result('Healthy', message);
    case 'Failed':
    case 'Error':
      return result('Degraded', message);
    default:
      return result('Unknown', message);
  }
};
