export {
  applicationSetEnvelopeProblem,
  applicationSetNameProblem,
  applicationSetObjectSchema,
  parseApplicationSet,
  type ApplicationSet,
  type ApplicationSetObject,
  type ApplicationTemplate,
  type GeneratorSpec,
  APPLICATIONSET_API_VERSIONS,
  SUPPORTED_GENERATORS,
} from './application-set.js';
export { generate, findDuplicateTargetNames } from './generate.js';
export {
  explain,
  type Explanation,
  type ExplainedTarget,
  type GeneratorExplanation,
  type SelectorCheck,
} from './explain.js';
export { GeneratorError, type GeneratorErrorCode } from './generator-error.js';
export { RESOURCES_FINALIZER } from './render-application.js';
export { isChartSource, literalRepoRefs, literalRepoUrlPaths } from './literal-repositories.js';
export type {
  ClusterInfo,
  RepositoryFiles,
  GenerateContext,
  GeneratedTarget,
  GeneratedApplication,
  GenerateResult,
  Params,
} from './types.js';
export { renderString, type TemplateMode } from './render-string.js';
