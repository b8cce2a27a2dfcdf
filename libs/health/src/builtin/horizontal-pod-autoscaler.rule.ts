import { type Condition, conditions, field, isRecord, str } from '../object-fields.js';
import { type BuiltinRule, result, unsupportedVersion } from './rule.js';

const VERSIONS = new Set(['v1', 'v2beta1', 'v2beta2', 'v2']);
const V1_CONDITIONS_ANNOTATION = 'autoscaling.alpha.kubernetes.io/conditions';
const WAITING = result('Progressing', 'Waiting to Autoscale');

/** Condition reasons with which the autoscaler cannot do its job: the HPA is broken, not just idle. */
const DEGRADED_REASONS: Record<string, ReadonlySet<string>> = {
  AbleToScale: new Set(['FailedGetScale', 'FailedUpdateScale']),
  ScalingActive: new Set([
    'FailedGetResourceMetric',
    'FailedGetObjectMetric',
    'FailedGetPodsMetric',
    'FailedGetExternalMetric',
    'FailedComputeMetricsReplicas',
    'InvalidSelector',
  ]),
};

function fromConditions(all: Condition[]): ReturnType<BuiltinRule> {
  const degraded = all.find((c) => DEGRADED_REASONS[c.type]?.has(c.reason));
  if (degraded) return result('Degraded', degraded.message);
  const healthy = all.find(
    (c) => (c.type === 'AbleToScale' || c.type === 'ScalingLimited') && c.status === 'True',
  );
  if (healthy) return result('Healthy', healthy.message);
  return WAITING;
}

/** autoscaling/v1 keeps its conditions as JSON in an annotation; v2* have them in status. */
export const horizontalPodAutoscalerHealth: BuiltinRule = (obj, gvk) => {
  if (!VERSIONS.has(gvk.version)) return unsupportedVersion(gvk, 'HPA');
  if (gvk.version !== 'v1') return fromConditions(conditions(obj));
  const annotations = field(obj, 'metadata', 'annotations');
  if (!isRecord(annotations) || !(V1_CONDITIONS_ANNOTATION in annotations)) return WAITING;
  let parsed: unknown;
  try {
    parsed = JSON.parse(str(annotations, V1_CONDITIONS_ANNOTATION));
  } catch (err) {
    return result('Unknown', `failed to convert conditions annotation to typed: ${(err as Error).message}`);
  }
  if (parsed === null) return WAITING;
  if (!Array.isArray(parsed)) {
    return result('Unknown', 'failed to convert conditions annotation to typed: expected a JSON array');
  }
  if (parsed.length === 0) return WAITING;
  return fromConditions(conditions({ c: parsed }, 'c'));
};
