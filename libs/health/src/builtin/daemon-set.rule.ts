import { int, str } from '../object-fields.js';
import { type BuiltinRule, quote, result, unsupportedVersion } from './rule.js';

export const daemonSetHealth: BuiltinRule = (obj, gvk) => {
  if (gvk.group !== 'apps' || gvk.version !== 'v1') return unsupportedVersion(gvk, 'DaemonSet');
  if (int(obj, 'metadata', 'generation') > int(obj, 'status', 'observedGeneration')) {
    return result(
      'Progressing',
      'Waiting for rollout to finish: observed daemon set generation less than desired generation',
    );
  }
  const desired = int(obj, 'status', 'desiredNumberScheduled');
  const updated = int(obj, 'status', 'updatedNumberScheduled');
  const available = int(obj, 'status', 'numberAvailable');
  if (str(obj, 'spec', 'updateStrategy', 'type') === 'OnDelete') {
    return result('Healthy', `daemon set ${updated} out of ${desired} new pods have been updated`);
  }
  const name = quote(str(obj, 'metadata', 'name'));
  if (updated < desired) {
    return result(
      'Progressing',
      `Waiting for daemon set ${name} rollout to finish: ${updated} out of ${desired} new pods have been updated...`,
    );
  }
  if (available < desired) {
    return result(
      'Progressing',
      `Waiting for daemon set ${name} rollout to finish: ${available} of ${desired} updated pods are available...`,
    );
  }
  return result('Healthy');
};
