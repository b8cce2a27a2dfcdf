import { conditions, findCondition, int, optionalInt } from '../object-fields.js';
import { type BuiltinRule, result, unsupportedVersion } from './rule.js';

export const replicaSetHealth: BuiltinRule = (obj, gvk) => {
  if (gvk.group !== 'apps' || gvk.version !== 'v1') return unsupportedVersion(gvk, 'ReplicaSet');
  if (int(obj, 'metadata', 'generation') > int(obj, 'status', 'observedGeneration')) {
    return result(
      'Progressing',
      'Waiting for rollout to finish: observed replica set generation less than desired generation',
    );
  }
  const failure = findCondition(conditions(obj), 'ReplicaFailure');
  if (failure?.status === 'True') return result('Degraded', failure.message);
  const desired = optionalInt(obj, 'spec', 'replicas');
  const available = int(obj, 'status', 'availableReplicas');
  if (desired !== undefined && available < desired) {
    return result(
      'Progressing',
      `Waiting for rollout to finish: ${available} out of ${desired} new replicas are available...`,
    );
  }
  return result('Healthy');
};
