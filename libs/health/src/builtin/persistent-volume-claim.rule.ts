import { str } from '../object-fields.js';
import { type BuiltinRule, result, unsupportedVersion } from './rule.js';

export const persistentVolumeClaimHealth: BuiltinRule = (obj, gvk) => {
  if (gvk.group !== '' || gvk.version !== 'v1') return unsupportedVersion(gvk, 'PersistentVolumeClaim');
  switch (str(obj, 'status', 'phase')) {
    case 'Lost':
      return result('Degraded');
    case 'Pending':
      return result('Progressing');
    case 'Bound':
      return result('Healthy');
    default:
      return result('Unknown');
  }
};
