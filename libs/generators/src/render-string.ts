import { renderFastTemplate } from './fasttemplate.js';
import { GeneratorError } from './generator-error.js';
import { ARGO_FUNCTIONS } from './argo-functions.js';
import { TemplateEngine, TemplateError, type MissingKey } from '@flotilla/gotemplate';
import { type Params } from './types.js';

// One engine for the process: parsed templates are cached by source, and every target reuses them.
const engine = new TemplateEngine(ARGO_FUNCTIONS);

const MUTATING = /\b(set|unset|merge|mergeOverwrite)\b/;

/** How an ApplicationSet's strings are templated: `spec.goTemplate` and `spec.goTemplateOptions`. */
export interface TemplateMode {
  goTemplate: boolean;
  goTemplateOptions: string[];
}

/** Renders one string with one parameter set, in the ApplicationSet's template mode. */
export function renderString(template: string, params: Params, mode: TemplateMode): string {
  // Without an action there is nothing to render in either mode (but options are still checked).
  if (!template.includes('{{') && !mode.goTemplate) return template;
  if (!mode.goTemplate) return renderFastTemplate(template, params);
  const missingKey = missingKeyOption(mode.goTemplateOptions);
  if (!template.includes('{{')) return template;
  let parsed;
  try {
    parsed = engine.parse(template);
  } catch (err) {
    if (!(err instanceof TemplateError)) throw err;
    throw new GeneratorError('template-parse', `failed to parse template ${template}: ${messageOf(err)}`);
  }
  try {
    // Sprig's set/unset/merge mutate their dict: give them a copy so one target cannot change the next.
    const data = MUTATING.test(template) ? structuredClone(params) : params;
    return parsed.execute(data, { missingKey });
  } catch (err) {
    if (!(err instanceof TemplateError)) throw err;
    throw new GeneratorError('template-execute', `failed to execute go template ${template}: ${err.message}`);
  }
}

function missingKeyOption(options: string[]): MissingKey {
  let missingKey: MissingKey = 'default';
  for (const option of options) {
    const m = /^missingkey=(default|invalid|zero|error)$/.exec(option);
    if (!m) {
      throw new GeneratorError(
        'invalid-appset',
        `unrecognized goTemplateOptions entry '${option}' (expected missingkey=default|invalid|zero|error)`,
        'spec.goTemplateOptions',
      );
    }
    missingKey = m[1] === 'invalid' ? 'default' : (m[1] as MissingKey);
  }
  return missingKey;
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/**
 * Templates every string of a JSON value, map keys included (Argo CD's deeplyReplace): this is how
 * Application templates and, inside a matrix, generator specs receive parameters.
 */
export function renderDeep(value: unknown, params: Params, mode: TemplateMode): unknown {
  if (typeof value === 'string') return renderString(value, params, mode);
  if (Array.isArray(value)) return value.map((v) => renderDeep(v, params, mode));
  if (typeof value === 'object' && value !== null) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      if (v === null) continue;
      out[renderString(k, params, mode)] = renderDeep(v, params, mode);
    }
    return out;
  }
  return value;
}
