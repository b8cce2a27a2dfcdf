export {
  anyValueSelectorSchema,
  apiServerLabelSelectorSchema,
  compileSelector,
  isEmptySelector,
  LabelSelectorError,
  labelSelectorSchema,
  looseLabelSelectorSchema,
  parseSelectorText,
  SELECTOR_OPERATORS,
  selectorOperatorSchema,
  unmetRequirements,
  type LabelSelector,
  type LooseLabelSelector,
  type UnmetRequirement,
} from './label-selector.js';
export {
  LABEL_KEY_PATTERN,
  LABEL_VALUE_PATTERN,
  OBJECT_NAME_PATTERN,
  labelKeyProblem,
  labelKeySchema,
  labelValueProblem,
  labelValueSchema,
  labelsSchema,
} from './label-syntax.js';
export { metadataSchema, objectNameSchema } from './object-metadata.js';
