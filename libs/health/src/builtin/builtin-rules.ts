import { type GroupVersionKind } from '../object-fields.js';
import { apiServiceHealth } from './api-service.rule.js';
import { argoWorkflowHealth } from './argo-workflow.rule.js';
import { conditionsHealth } from './conditions.rule.js';
import { cronJobHealth } from './cron-job.rule.js';
import { customResourceDefinitionHealth } from './custom-resource-definition.rule.js';
import { daemonSetHealth } from './daemon-set.rule.js';
import { deploymentHealth } from './deployment.rule.js';
import { horizontalPodAutoscalerHealth } from './horizontal-pod-autoscaler.rule.js';
import { jobHealth } from './job.rule.js';
import { namespaceHealth } from './namespace.rule.js';
import { persistentVolumeClaimHealth } from './persistent-volume-claim.rule.js';
import { podDisruptionBudgetHealth } from './pod-disruption-budget.rule.js';
import { podHealth } from './pod.rule.js';
import { replicaSetHealth } from './replica-set.rule.js';
import { type BuiltinRule } from './rule.js';
import { ingressHealth, serviceHealth } from './service.rule.js';
import { statefulSetHealth } from './stateful-set.rule.js';

/** Built-in rules by `<group>/<kind>` (core kinds: `/<Kind>`), the kinds Argo CD checks without configuration. */
const RULES: ReadonlyMap<string, BuiltinRule> = new Map([
  ['apps/Deployment', deploymentHealth],
  ['apps/StatefulSet', statefulSetHealth],
  ['apps/ReplicaSet', replicaSetHealth],
  ['apps/DaemonSet', daemonSetHealth],
  ['extensions/Ingress', ingressHealth],
  ['networking.k8s.io/Ingress', ingressHealth],
  ['argoproj.io/Workflow', argoWorkflowHealth],
  ['apiregistration.k8s.io/APIService', apiServiceHealth],
  ['/Service', serviceHealth],
  ['/PersistentVolumeClaim', persistentVolumeClaimHealth],
  ['/Pod', podHealth],
  ['/Namespace', namespaceHealth],
  ['batch/Job', jobHealth],
  ['batch/CronJob', cronJobHealth],
  ['policy/PodDisruptionBudget', podDisruptionBudgetHealth],
  ['autoscaling/HorizontalPodAutoscaler', horizontalPodAutoscalerHealth],
  ['apiextensions.k8s.io/CustomResourceDefinition', customResourceDefinitionHealth],
]);

/**
 * API groups whose kinds all follow the status-conditions convention and get a verdict from Argo CD's bundled
 * checks; other custom resources get none, as in Argo CD (it leaves unknown kinds out of app health).
 */
const CONDITION_GROUP_SUFFIXES = ['.toolkit.fluxcd.io'];

export function builtinRuleFor(gvk: GroupVersionKind): BuiltinRule | undefined {
  const rule = RULES.get(`${gvk.group}/${gvk.kind}`);
  if (rule) return rule;
  if (CONDITION_GROUP_SUFFIXES.some((suffix) => gvk.group.endsWith(suffix))) return conditionsHealth;
  return undefined;
}
