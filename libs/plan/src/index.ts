export {
  DEFAULT_DELETION_GUARD_PERCENT,
  deletionGuardLimit,
  evaluateDeletionGuard,
  isPercent,
  nextGuardBaseline,
  type GuardInput,
  type GuardVerdict,
} from './deletion-guard.js';
export { assignSteps, stepName, type StepCandidate, type StepSelector } from './rollout-steps.js';
export { groupPicks, relabelCluster, type ClusterGroupSpec } from './cluster-groups.js';
export { withRawAppSets, withRolloutStrategy } from './stored-appsets.js';
export {
  buildFleetSide,
  PlanSideError,
  sharedRenderKey,
  type PlanCandidate,
  type SideInput,
  type SideReader,
} from './fleet-side.js';
export {
  planFleetChange,
  type FleetSide,
  type PlannedTarget,
  type PlanOptions,
} from './plan-fleet-change.js';
export {
  planReportSchema,
  planReportJsonSchema,
  type AppSetPlan,
  type Change,
  type FleetObjectChange,
  type GuardReport,
  type ObjectChange,
  type PlanReport,
  type PolicyViolation,
  type TargetPlan,
} from './plan-report.js';
export { formatPlanMarkdown, formatPlanTable, planHeadline, MAX_MARKDOWN_CHARS } from './format-plan.js';
export { commitsToRevert, type RevertRange } from './revert-commits.js';
