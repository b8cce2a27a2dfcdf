import { type GenerateContext, type Params } from '../types.js';
import { type TemplateMode } from '../render-string.js';

/** What every generator sees: the template mode and the outside world the caller supplies. */
export interface GeneratorEnv extends TemplateMode {
  ctx: GenerateContext;
}

/** A generator turns its (already interpolated) spec into parameter sets; `path` is its field path. */
export type GeneratorFn<Spec> = (spec: Spec, env: GeneratorEnv, path: string) => Params[];
