import { type Arg, type Command, type ListNode, type Node, type Pipe } from './ast.js';
import { formatValue } from './go-format.js';
import { lineCol, TemplateError } from './template-error.js';
import { goTypeName, isMap, isTrue } from './values.js';

export type MissingKey = 'default' | 'zero' | 'error';

/** The Go parameter types functions declare; arguments are checked against them as Go does. */
export type ParamType = 'any' | 'string' | 'int' | 'float' | 'bool' | 'map' | 'list';

export interface GoFunction {
  params: ParamType[];
  /** Type of the trailing variadic parameter, if any. */
  variadic?: ParamType;
  call(...args: unknown[]): unknown;
}

/** A built-in evaluated with unevaluated arguments (`and`/`or` short-circuit). */
export interface LazyFunction {
  lazy: true;
  call(args: (() => unknown)[]): unknown;
}

export type FuncMap = Record<string, GoFunction | LazyFunction>;

/** Declares a function with Go parameter types (the trailing `variadic` type, if given, repeats). */
export function goFunction(
  params: ParamType[],
  call: (...args: unknown[]) => unknown,
  variadic?: ParamType,
): GoFunction {
  return variadic === undefined ? { params, call } : { params, variadic, call };
}

export function lazyFunction(call: (args: (() => unknown)[]) => unknown): LazyFunction {
  return { lazy: true, call };
}

/** An error raised inside a function: reported as `error calling NAME: …`. */
export class FunctionError extends Error {}

const NOT_GIVEN = Symbol('not given');
type Final = unknown;

// Control-flow signals for {{break}}/{{continue}}; Errors only so that lint accepts throwing them.
class BreakSignal extends Error {}
class ContinueSignal extends Error {}

interface Variable {
  name: string;
  value: unknown;
}

/** Executes a parsed template against data; throws TemplateError. */
export function execute(
  src: string,
  tree: ListNode,
  data: unknown,
  funcs: FuncMap,
  missingKey: MissingKey,
): string {
  const state = new State(src, funcs, missingKey, data);
  state.walkList(data, tree);
  return state.out;
}

class State {
  out = '';
  private vars: Variable[];
  private current: Command | undefined;
  /** The node Go would name in an error, when narrower than the command (a field chain). */
  private node: { pos: number; src: string } | undefined;

  constructor(
    private readonly src: string,
    private readonly funcs: FuncMap,
    private readonly missingKey: MissingKey,
    data: unknown,
  ) {
    this.vars = [{ name: '$', value: data }];
  }

  private fail(msg: string): never {
    const at = this.node ?? this.current;
    if (!at) throw new TemplateError('execute', `template: : executing "" : ${msg}`);
    const { line, col } = lineCol(this.src, at.pos);
    throw new TemplateError('execute', `template: :${line}:${col}: executing "" at <${at.src}>: ${msg}`);
  }

  walkList(dot: unknown, list: ListNode): void {
    for (const node of list) this.walk(dot, node);
  }

  private walk(dot: unknown, node: Node): void {
    switch (node.type) {
      case 'text':
        this.out += node.text;
        return;
      case 'action': {
        const value = this.evalPipeline(dot, node.pipe);
        if (node.pipe.decl.length === 0) this.out += printable(value);
        return;
      }
      case 'if':
      case 'with': {
        const mark = this.vars.length;
        const value = this.evalPipeline(dot, node.pipe);
        if (isTrue(value)) this.walkList(node.type === 'with' ? value : dot, node.list);
        else if (node.elseList) this.walkList(dot, node.elseList);
        this.vars.length = mark;
        return;
      }
      case 'range':
        this.walkRange(dot, node);
        return;
      case 'break':
        throw new BreakSignal();
      case 'continue':
        throw new ContinueSignal();
    }
  }

  private walkRange(dot: unknown, node: Extract<Node, { type: 'range' }>): void {
    const mark = this.vars.length;
    const value = this.evalPipeline(dot, node.pipe);
    const decl = node.pipe.decl;
    let items: [unknown, unknown][];
    if (Array.isArray(value)) items = value.map((v, i) => [BigInt(i), v]);
    else if (isMap(value))
      items = Object.keys(value)
        .sort()
        .map((k) => [k, value[k]]);
    else if (typeof value === 'bigint') {
      if (decl.length > 1) this.fail(`can't use ${value} to iterate over more than one variable`);
      items = [];
      for (let i = 0n; i < value; i++) items.push([i, i]);
    } else if (value === undefined || value === null) items = [];
    else this.fail(`range can't iterate over ${formatValue(value)}`);
    for (const [key, elem] of items) {
      const iterMark = this.vars.length;
      if (decl.length > 0)
        this.setTop(decl.length === 1 ? 1 : 2, decl.length === 1 ? elem : key, node.pipe.isAssign, decl[0]);
      if (decl.length > 1) this.setTop(1, elem, node.pipe.isAssign, decl[1]);
      try {
        this.walkList(elem, node.list);
      } catch (signal) {
        if (signal instanceof BreakSignal) {
          this.vars.length = iterMark;
          break;
        }
        if (!(signal instanceof ContinueSignal)) throw signal;
      }
      this.vars.length = iterMark;
    }
    if (items.length === 0 && node.elseList) this.walkList(dot, node.elseList);
    this.vars.length = mark;
  }

  private setTop(fromTop: number, value: unknown, isAssign: boolean, name: string | undefined): void {
    if (isAssign && name !== undefined) {
      this.setVar(name, value);
      return;
    }
    const v = this.vars[this.vars.length - fromTop];
    if (v) v.value = value;
  }

  private setVar(name: string, value: unknown): void {
    for (let i = this.vars.length - 1; i >= 0; i--) {
      const v = this.vars[i];
      if (v && v.name === name) {
        v.value = value;
        return;
      }
    }
    this.fail(`undefined variable: ${name}`);
  }

  private varValue(name: string): unknown {
    for (let i = this.vars.length - 1; i >= 0; i--) {
      const v = this.vars[i];
      if (v && v.name === name) return v.value;
    }
    return this.fail(`undefined variable: ${name}`);
  }

  private evalPipeline(dot: unknown, pipe: Pipe): unknown {
    let value: Final = NOT_GIVEN;
    for (const cmd of pipe.cmds) value = this.evalCommand(dot, cmd, value);
    for (const name of pipe.decl) {
      if (pipe.isAssign) this.setVar(name, value);
      else this.vars.push({ name, value });
    }
    return value;
  }

  private evalCommand(dot: unknown, cmd: Command, final: Final): unknown {
    const saved = this.current;
    this.current = cmd;
    try {
      const first = cmd.args[0];
      if (!first) return this.fail('empty command');
      switch (first.type) {
        case 'field':
          return this.evalFieldChain(nodeOf(first), dot, first.path, cmd.args, final);
        case 'variable': {
          const value = this.varValue(first.name);
          if (first.path.length === 0) {
            this.notAFunction(cmd, final, first.name);
            return value;
          }
          return this.evalFieldChain(nodeOf(first), value, first.path, cmd.args, final);
        }
        case 'chain': {
          const value = this.evalArgValue(dot, first.node);
          return this.evalFieldChain(nodeOf(first), value, first.path, cmd.args, final);
        }
        case 'identifier':
          return this.evalFunction(dot, first.name, cmd, final);
        case 'pipe': {
          this.notAFunction(cmd, final, 'pipeline');
          const mark = this.vars.length;
          const value = this.evalPipeline(dot, first.pipe);
          this.vars.length = mark;
          return value;
        }
        case 'nil':
          return this.fail('nil is not a command');
        case 'dot':
          this.notAFunction(cmd, final, '.');
          return dot;
        case 'bool':
        case 'string':
        case 'number':
          this.notAFunction(
            cmd,
            final,
            first.type === 'string'
              ? JSON.stringify(first.value)
              : String(first.type === 'bool' ? first.value : first.text),
          );
          return first.type === 'number' ? literal(first, 'any') : first.value;
      }
    } finally {
      this.current = saved;
    }
  }

  private notAFunction(cmd: Command, final: Final, what: string): void {
    if (cmd.args.length > 1 || final !== NOT_GIVEN) this.fail(`can't give argument to non-function ${what}`);
  }

  /** `.a.b.c`: every step but the last is a plain lookup; the last may not take arguments (maps have no methods). */
  private evalFieldChain(
    node: { pos: number; src: string },
    receiver: unknown,
    path: string[],
    args: Arg[],
    final: Final,
  ): unknown {
    const saved = this.node;
    this.node = node;
    try {
      return this.walkFields(receiver, path, args, final);
    } finally {
      this.node = saved;
    }
  }

  private walkFields(receiver: unknown, path: string[], args: Arg[], final: Final): unknown {
    let value = receiver;
    for (let i = 0; i < path.length; i++) {
      const name = path[i] ?? '';
      const last = i === path.length - 1;
      if (last && (args.length > 1 || final !== NOT_GIVEN)) {
        if (isMap(value)) this.fail(`${name} is not a method but has arguments`);
      }
      value = this.evalField(name, value);
    }
    return value;
  }

  private evalField(name: string, receiver: unknown): unknown {
    if (receiver === undefined) {
      if (this.missingKey === 'error') this.fail(`nil data; no entry for key "${name}"`);
      return undefined;
    }
    if (receiver === null) return this.fail(`nil pointer evaluating interface {}.${name}`);
    if (isMap(receiver)) {
      if (Object.hasOwn(receiver, name)) return receiver[name];
      switch (this.missingKey) {
        case 'error':
          return this.fail(`map has no entry for key "${name}"`);
        case 'zero':
          return null;
        case 'default':
          return undefined;
      }
    }
    // Values reached through a map are interface{}s, which is the type Go names here.
    return this.fail(`can't evaluate field ${name} in type interface {}`);
  }

  private evalFunction(dot: unknown, name: string, cmd: Command, final: Final): unknown {
    const fn = this.funcs[name];
    if (!fn) return this.fail(`"${name}" is not a defined function`);
    const argNodes = cmd.args.slice(1);
    if ('lazy' in fn) {
      const thunks = argNodes.map((a) => () => this.evalArgValue(dot, a));
      if (final !== NOT_GIVEN) thunks.push(() => final);
      if (thunks.length === 0) this.fail(`wrong number of args for ${name}: want at least 1 got 0`);
      return this.callGuarded(name, () => fn.call(thunks));
    }
    const given = argNodes.length + (final === NOT_GIVEN ? 0 : 1);
    const fixed = fn.params.length;
    if (fn.variadic === undefined ? given !== fixed : given < fixed) {
      this.fail(
        `wrong number of args for ${name}: want ${fn.variadic === undefined ? '' : 'at least '}${fixed} got ${given}`,
      );
    }
    const values: unknown[] = [];
    argNodes.forEach((node, i) => {
      const type = (i < fixed ? fn.params[i] : fn.variadic) ?? 'any';
      values.push(this.evalArg(dot, node, type));
    });
    if (final !== NOT_GIVEN) {
      const type = (given - 1 < fixed ? fn.params[given - 1] : fn.variadic) ?? 'any';
      values.push(this.validateType(final, type));
    }
    return this.callGuarded(name, () => fn.call(...values));
  }

  private callGuarded(name: string, call: () => unknown): unknown {
    try {
      return call();
    } catch (err) {
      if (err instanceof TemplateError) throw err;
      if (err instanceof FunctionError) this.fail(`error calling ${name}: ${err.message}`);
      this.fail(`error calling ${name}: ${err instanceof Error ? err.message : String(err)}`);
    }
  }

  private evalArg(dot: unknown, node: Arg, type: ParamType): unknown {
    if (node.type === 'number') return literal(node, type, (m) => this.fail(m));
    if (node.type === 'bool' && type !== 'any' && type !== 'bool')
      this.fail(`expected ${goParam(type)}; found ${node.value}`);
    if (node.type === 'string' && type !== 'any' && type !== 'string')
      this.fail(`expected ${goParam(type)}; found ${JSON.stringify(node.value)}`);
    if (node.type === 'nil') {
      if (type === 'any' || type === 'map' || type === 'list') return null;
      this.fail(`cannot assign nil to ${goParam(type)}`);
    }
    return this.validateType(this.evalArgValue(dot, node), type);
  }

  /** Evaluates an argument without a declared type. */
  private evalArgValue(dot: unknown, node: Arg): unknown {
    switch (node.type) {
      case 'dot':
        return dot;
      case 'nil':
        return null;
      case 'bool':
        return node.value;
      case 'string':
        return node.value;
      case 'number':
        return literal(node, 'any');
      case 'field':
        return this.evalFieldChain(nodeOf(node), dot, node.path, [], NOT_GIVEN);
      case 'variable': {
        const v = this.varValue(node.name);
        return node.path.length === 0 ? v : this.evalFieldChain(nodeOf(node), v, node.path, [], NOT_GIVEN);
      }
      case 'identifier':
        return this.evalFunction(
          dot,
          node.name,
          { args: [node], pos: this.current?.pos ?? 0, src: node.name },
          NOT_GIVEN,
        );
      case 'pipe': {
        const mark = this.vars.length;
        const v = this.evalPipeline(dot, node.pipe);
        this.vars.length = mark;
        return v;
      }
      case 'chain':
        return this.evalFieldChain(nodeOf(node), this.evalArgValue(dot, node.node), node.path, [], NOT_GIVEN);
    }
  }

  private validateType(value: unknown, type: ParamType): unknown {
    if (type === 'any') return value === undefined ? null : value;
    if (value === undefined) {
      if (type === 'map' || type === 'list') return null;
      this.fail(`invalid value; expected ${goParam(type)}`);
    }
    const ok =
      (type === 'string' && typeof value === 'string') ||
      (type === 'int' && typeof value === 'bigint') ||
      (type === 'float' && typeof value === 'number') ||
      (type === 'bool' && typeof value === 'boolean') ||
      (type === 'map' && (isMap(value) || value === null)) ||
      (type === 'list' && (Array.isArray(value) || value === null));
    if (!ok) this.fail(`wrong type for value; expected ${goParam(type)}; got ${goTypeName(value)}`);
    return value;
  }
}

function goParam(type: ParamType): string {
  switch (type) {
    case 'any':
      return 'interface {}';
    case 'string':
      return 'string';
    case 'int':
      return 'int';
    case 'float':
      return 'float64';
    case 'bool':
      return 'bool';
    case 'map':
      return 'map[string]interface {}';
    case 'list':
      return '[]interface {}';
  }
}

/** A constant converted to the parameter type, as Go converts untyped constants. */
function literal(node: Arg, type: ParamType, fail?: (msg: string) => never): unknown {
  if (node.type !== 'number') return undefined;
  const hex = /^[+-]?0[xXbBoO]/.test(node.text);
  const looksFloat = !hex && !node.isChar && /[.eE]/.test(node.text);
  switch (type) {
    case 'int':
      if (node.int === undefined) return fail?.(`expected integer; found ${node.text}`);
      return node.int;
    case 'float':
      return node.float;
    case 'any':
      return looksFloat || node.int === undefined ? node.float : node.int;
    case 'string':
    case 'bool':
    case 'map':
    case 'list':
      return fail?.(`expected ${goParam(type)}; found ${node.text}`);
  }
}

function nodeOf(arg: Extract<Arg, { type: 'field' | 'variable' | 'chain' }>): { pos: number; src: string } {
  const fields = arg.path.map((p) => `.${p}`).join('');
  switch (arg.type) {
    case 'field':
      return { pos: arg.pos, src: fields };
    case 'variable':
      return { pos: arg.pos, src: `${arg.name}${fields}` };
    case 'chain':
      return { pos: arg.pos, src: `(…)${fields}` };
  }
}

/** What an action prints: Go prints "no value" for missing and nil results. */
function printable(value: unknown): string {
  if (value === undefined || value === null) return '<no value>';
  return formatValue(value);
}
