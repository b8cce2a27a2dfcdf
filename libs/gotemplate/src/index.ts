import { type ListNode } from './ast.js';
import { BUILTINS } from './builtins.js';
import { execute, type FuncMap, type MissingKey } from './exec.js';
import { parse } from './parser.js';
import { SPRIG } from './sprig.js';

/**
 * A Go text/template engine: lexer → parser → evaluator, with Go's builtins and the common Sprig
 * functions. Self-contained: it knows nothing of ApplicationSets.
 */
export { TemplateError } from './template-error.js';
export {
  FunctionError,
  goFunction,
  lazyFunction,
  type FuncMap,
  type GoFunction,
  type LazyFunction,
  type MissingKey,
  type ParamType,
} from './exec.js';
export { formatValue, formatFloat } from './go-format.js';
export { goJson } from './go-json.js';
export { BUILTINS } from './builtins.js';
export { SPRIG, strval, toInt64 } from './sprig.js';

export interface GoTemplate {
  execute(data: unknown, options?: { missingKey?: MissingKey }): string;
}

/** Functions given at construction override Go's builtins and Sprig, as `Funcs` does in Go. */
export class TemplateEngine {
  private readonly funcs: FuncMap;
  private readonly cache = new Map<string, ListNode>();

  constructor(extra: FuncMap = {}) {
    this.funcs = { ...BUILTINS, ...SPRIG, ...extra };
  }

  /** Parses (once per distinct source) and returns a template; throws TemplateError. */
  parse(src: string): GoTemplate {
    let tree = this.cache.get(src);
    if (!tree) {
      tree = parse(src, { hasFunction: (name) => Object.hasOwn(this.funcs, name) });
      if (this.cache.size > 5000) this.cache.clear();
      this.cache.set(src, tree);
    }
    const parsed = tree;
    return {
      execute: (data, options) => execute(src, parsed, data, this.funcs, options?.missingKey ?? 'default'),
    };
  }
}
