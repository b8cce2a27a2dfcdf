export { compilePolicySet, isPolicyDocument, POLICY_KINDS, type PolicySet } from './policy-set.js';
export {
  compilePolicy,
  compileBinding,
  type CompiledPolicy,
  type CompiledBinding,
  type Compiled,
} from './compile-policy.js';
export {
  evaluatePolicies,
  policyContext,
  type AdmissionInput,
  type AdmissionVerdict,
  type AuditAnnotation,
  type ObjectRef,
  type PolicyContext,
  type PolicyDecision,
} from './evaluate-policies.js';
export {
  formatPolicyPath,
  type PolicyError,
  type PolicyErrorCode,
  type PolicySetError,
} from './policy-error.js';
export {
  POLICY_API_VERSION,
  validatingAdmissionPolicySchema,
  validatingAdmissionPolicyBindingSchema,
  type ValidatingAdmissionPolicy,
  type ValidatingAdmissionPolicyBinding,
  type ValidationAction,
} from './policy-schema.js';
export { ResourceIndex, type KubeObject, type ResourceInfo } from './resource-index.js';
export { compileExpression } from './cel/kubernetes-cel.js';
export {
  SCOPE_ANNOTATIONS,
  allowsBreakGlass,
  bindingScope,
  scopeHolds,
  scopedPolicySet,
  type BindingScope,
  type TargetScope,
} from './fleet-scope.js';
export {
  gateBundle,
  describeObject,
  describeViolation,
  type BundleGateOptions,
  type BundleVerdict,
  type PolicyViolation,
} from './gate-bundle.js';
