import { conditions } from '../object-fields.js';
import { type BuiltinRule, result, unsupportedVersion } from './rule.js';

/** Argo CD's Job check: the last of each terminal condition wins, whatever its status, as in Argo CD. */
export const jobHealth: BuiltinRule = (obj, gvk) => {
  if (gvk.group !== 'batch' || gvk.version !== 'v1') return unsupportedVersion(gvk, 'Job');
  let failed = false;
  let complete = false;
  let suspended = false;
  let failMessage = '';
  let message = '';
  for (const condition of conditions(obj)) {
    switch (condition.type) {
      case 'Failed':
        failed = true;
        complete = true;
        failMessage = condition.message;
        break;
      case 'Complete':
        complete = true;
        message = condition.message;
        break;
      case 'Suspended':
        complete = true;
        message = condition.message;
        if (condition.status === 'True') suspended = true;
        break;
    }
  }
  if (!complete) return result('Progressing', message);
  if (failed) return result('Degraded', failMessage);
  // Argo CD reports the (empty) failure message for a suspended Job; kept for identical output.
  if (suspended) return result('Suspended', failMessage);
  return result('Healthy', message);
};
