export {
  diffObjects,
  DEFAULT_MANAGER,
  type Difference,
  type DiffOptions,
  type DiffResult,
} from './diff-objects.js';
export { normalizeObject, type NormalizeOptions } from './normalize-object.js';
export { DiffError, type DiffErrorCode } from './diff-error.js';
export { keepLiveIgnoredFields } from './keep-live.js';
export { compileIgnoreRules, type CompiledIgnoreRule, type ObjectIdentity } from './ignore-rules.js';
export { parseQuantity, quantitiesEqual, type Quantity } from './quantity.js';
export { formatPointer, parsePointer, type PathSegment } from './json-pointer.js';
export {
  clientSideApplyPatch,
  patchTypeOf,
  withLastApplied,
  type ClientSideApplyPatch,
} from './client-side-apply.js';
export { LAST_APPLIED_ANNOTATION } from './last-applied.js';
export { liveForDrift } from './live-for-drift.js';
export {
  renderUnifiedDiff,
  syncedObject,
  diffLabel,
  DEFAULT_MAX_DIFF_BYTES,
  type UnifiedDiff,
  type UnifiedDiffInput,
} from './unified-diff.js';
