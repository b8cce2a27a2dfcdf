import { compileSelector, LabelSelectorError, type LooseLabelSelector } from '@flotilla/labels';
import { GeneratorError } from './generator-error.js';

/**
 * `compileSelector` of @flotilla/labels, failing as every generator failure does: a GeneratorError
 * (INVALID_SELECTOR) at the selector's path.
 */
export function selectorMatcher(
  selector: LooseLabelSelector | null | undefined,
  path: string,
): (labels: Record<string, string>) => boolean {
  try {
    return compileSelector(selector, path);
  } catch (err) {
    if (err instanceof LabelSelectorError) throw new GeneratorError('invalid-selector', err.detail, err.path);
    throw err;
  }
}
