export { type FleetFile } from './fleet-file.js';
export {
  validateFleetDirectory,
  isFleetFile,
  type FleetPolicy,
  type FleetPolicyParam,
  type FleetValidation,
} from './validate-fleet-directory.js';
export {
  HEALTH_RULES_DIR,
  isHealthRuleFile,
  validateFleetHealthRules,
  type FleetHealthRule,
} from './health-rules.js';
export { checkPolicyDocument, type ParsedFleetPolicy } from './kinds/admission-policy.js';
export { formatFleetError, compareFleetErrors, type FleetError, type FleetErrorCode } from './fleet-error.js';
export {
  FLEET_KINDS,
  type FleetKind,
  type FleetObject,
  type FleetObjectSource,
  type ParsedFleetObject,
} from './fleet-object.js';
export { checkDocument, type CheckedDocument } from './check-document.js';
export { repoPermitted, DEFAULT_PROJECT } from './check-references.js';
export { FLOTILLA_API_VERSION } from './kinds/common.js';
export { checkApplicationSet } from './kinds/application-set.js';
export { clusterGroupObjectSchema, type ClusterGroupObject } from './kinds/cluster-group.js';
export { projectObjectSchema, type ProjectObject, type ProjectDestination } from './kinds/project.js';
export {
  rolloutStrategyObjectSchema,
  rolloutStrategySpecSchema,
  type RolloutStrategyObject,
  type RolloutStep,
} from './kinds/rollout-strategy.js';
export { syncWindowObjectSchema, type SyncWindowObject } from './kinds/sync-window.js';
export {
  sourceVerificationObjectSchema,
  sourceVerificationSpecSchema,
  type SourceVerificationObject,
} from './kinds/source-verification.js';
export { AllowedSignersError, parseAllowedSigners, type AllowedSigner } from './allowed-signers.js';
export { fleetJsonSchemas, schemaFileName, serializeSchema } from './json-schemas.js';
export {
  UNRESTRICTED_PROJECT,
  checkDestination,
  checkObject,
  checkRepository,
  groupKindListed,
  literalRepoFields,
  projectNameOf,
  restrictionsFor,
  scopeFromManifests,
  type ProjectCluster,
  type ProjectObjectRef,
  type ProjectSpec,
  type ProjectViolation,
} from './project-policy.js';
export { checkAgentNamespaces } from './agent-namespaces.js';
export { yamlErrorParts } from './yaml-documents.js';
export {
  NOTIFICATION_TRIGGERS,
  NOTIFICATION_TEMPLATE_SAMPLE,
  notificationPolicyObjectSchema,
  notificationPolicySpecSchema,
  templateProblem,
  type NotificationPolicyObject,
  type NotificationPolicySpec,
  type NotificationTrigger,
} from './kinds/notification-policy.js';
