import { conditions } from '../object-fields.js';
import { type BuiltinRule, result, unsupportedVersion } from './rule.js';

export const apiServiceHealth: BuiltinRule = (obj, gvk) => {
  if (gvk.version !== 'v1' && gvk.version !== 'v1beta1') return unsupportedVersion(gvk, 'APIService');
  const available = conditions(obj).find((c) => c.type === 'Available');
  if (!available) return result('Progressing', 'Waiting to be processed');
  return result(
    available.status === 'True' ? 'Healthy' : 'Progressing',
    `${available.reason}: ${available.message}`,
  );
};
