import { type GenerateContext, type Params } from '../types.js';
import { type TemplateMode } from '../render-string.js';

/** What every generator sees: the template mode, the outside world, and a way to run children. */
export interface GeneratorEnv extends TemplateMode {
  ctx: GenerateContext;
  applyNestedSelectors: boolean;
  /**
   * Runs a matrix/merge child as written, at `path`; `depth` is its nesting level. With `inherited`
   * (a parameter set of the first matrix child) its strings are templated with those first.
   */
  runChild(raw: unknown, path: string, depth: number, inherited?: Params): Params[];
}
