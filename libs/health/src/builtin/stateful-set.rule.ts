import { field, int, optionalInt, str } from '../object-fields.js';
import { type BuiltinRule, result, unsupportedVersion } from './rule.js';

export const statefulSetHealth: BuiltinRule = (obj, gvk) => {
  if (gvk.group !== 'apps' || gvk.version !== 'v1') return unsupportedVersion(gvk, 'StatefulSet');
  const observed = int(obj, 'status', 'observedGeneration');
  if (observed === 0 || int(obj, 'metadata', 'generation') > observed) {
    return result('Progressing', 'Waiting for statefulset spec update to be observed...');
  }
  const desired = optionalInt(obj, 'spec', 'replicas');
  const ready = int(obj, 'status', 'readyReplicas');
  const updated = int(obj, 'status', 'updatedReplicas');
  if (desired !== undefined && ready < desired) {
    return result('Progressing', `Waiting for ${desired - ready} pods to be ready...`);
  }
  const strategy = str(obj, 'spec', 'updateStrategy', 'type');
  const rollingUpdate = field(obj, 'spec', 'updateStrategy', 'rollingUpdate');
  if (strategy === 'RollingUpdate' && rollingUpdate !== undefined && rollingUpdate !== null) {
    const partition = optionalInt(rollingUpdate, 'partition');
    if (desired !== undefined && partition !== undefined && updated < desired - partition) {
      return result(
        'Progressing',
        `Waiting for partitioned roll out to finish: ${updated} out of ${desired - partition} new pods have been updated...`,
      );
    }
    return result('Healthy', `partitioned roll out complete: ${updated} new pods have been updated...`);
  }
  if (strategy === 'OnDelete') {
    return result('Healthy', `statefulset has ${ready} ready pods (${updated} updated)`);
  }
  const updateRevision = str(obj, 'status', 'updateRevision');
  const currentRevision = str(obj, 'status', 'currentRevision');
  if (updateRevision !== currentRevision) {
    return result(
      'Progressing',
      `waiting for statefulset rolling update to complete ${updated} pods at revision ${updateRevision}...`,
    );
  }
  return result(
    'Healthy',
    `statefulset rolling update complete ${int(obj, 'status', 'currentReplicas')} pods at revision ${currentRevision}...`,
  );
};
