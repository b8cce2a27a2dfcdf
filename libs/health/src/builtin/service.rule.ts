import { list, str } from '../object-fields.js';
import { type BuiltinRule, result, unsupportedVersion } from './rule.js';

/** A Service is healthy at once, except a LoadBalancer that has no ingress point yet. */
export const serviceHealth: BuiltinRule = (obj, gvk) => {
  if (gvk.group !== '' || gvk.version !== 'v1') return unsupportedVersion(gvk, 'Service');
  if (
    str(obj, 'spec', 'type') === 'LoadBalancer' &&
    list(obj, 'status', 'loadBalancer', 'ingress').length === 0
  ) {
    return result('Progressing');
  }
  return result('Healthy');
};

/** Ingress (networking.k8s.io and extensions, any version): healthy once the controller published an address. */
export const ingressHealth: BuiltinRule = (obj) =>
  result(list(obj, 'status', 'loadBalancer', 'ingress').length > 0 ? 'Healthy' : 'Progressing');
