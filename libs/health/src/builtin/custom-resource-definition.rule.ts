import { conditions } from '../object-fields.js';
import { type BuiltinRule, result, unsupportedVersion } from './rule.js';

/** gitops-engine's CustomResourceDefinition check: a CRD is usable once Established with accepted names. */
export const customResourceDefinitionHealth: BuiltinRule = (obj, gvk) => {
  if (gvk.version !== 'v1') return unsupportedVersion(gvk, 'CustomResourceDefinition');
  const all = conditions(obj);
  if (all.length === 0) return result('Progressing', 'Status conditions not found');
  let established = false;
  let terminating = false;
  let namesRejected = false;
  let violations = false;
  let message = '';
  for (const condition of all) {
    switch (condition.type) {
      case 'Terminating':
        if (condition.status === 'True') {
          terminating = true;
          message = condition.message;
        }
        break;
      case 'NamesAccepted':
        if (condition.status === 'False') {
          namesRejected = true;
          message = condition.message;
        }
        break;
      case 'Established':
        if (condition.status === 'True') established = true;
        else message = condition.message;
        break;
      case 'NonStructuralSchema':
        if (condition.status === 'True') {
          violations = true;
          message = condition.message;
        }
        break;
    }
  }
  if (terminating) return result('Progressing', `CRD is being terminated: ${message}`);
  if (namesRejected) return result('Degraded', `CRD names have not been accepted: ${message}`);
  if (!established) return result('Degraded', `CRD is not established: ${message}`);
  if (violations) return result('Degraded', `Schema violations found: ${message}`);
  return result('Healthy', 'CRD is healthy');
};
