import { conditions, field, findCondition, int, optionalInt, str } from '../object-fields.js';
import { type BuiltinRule, quote, result, unsupportedVersion } from './rule.js';

/** Argo CD's Deployment check, itself borrowed from `kubectl rollout status`. */
export const deploymentHealth: BuiltinRule = (obj, gvk) => {
  if (gvk.group !== 'apps' || gvk.version !== 'v1') return unsupportedVersion(gvk, 'Deployment');
  if (field(obj, 'spec', 'paused') === true) return result('Suspended', 'Deployment is paused');
  if (int(obj, 'metadata', 'generation') > int(obj, 'status', 'observedGeneration')) {
    return result(
      'Progressing',
      'Waiting for rollout to finish: observed deployment generation less than desired generation',
    );
  }
  const progressing = findCondition(conditions(obj), 'Progressing');
  const desired = optionalInt(obj, 'spec', 'replicas');
  const replicas = int(obj, 'status', 'replicas');
  const updated = int(obj, 'status', 'updatedReplicas');
  const available = int(obj, 'status', 'availableReplicas');
  if (progressing?.reason === 'ProgressDeadlineExceeded') {
    return result(
      'Degraded',
      `Deployment ${quote(str(obj, 'metadata', 'name'))} exceeded its progress deadline`,
    );
  }
  if (desired !== undefined && updated < desired) {
    return result(
      'Progressing',
      `Waiting for rollout to finish: ${updated} out of ${desired} new replicas have been updated...`,
    );
  }
  if (replicas > updated) {
    return result(
      'Progressing',
      `Waiting for rollout to finish: ${replicas - updated} old replicas are pending termination...`,
    );
  }
  if (available < updated) {
    return result(
      'Progressing',
      `Waiting for rollout to finish: ${available} of ${updated} updated replicas are available...`,
    );
  }
  return result('Healthy');
};
