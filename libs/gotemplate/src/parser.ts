import { type Arg, type Command, type ListNode, type Node, type Pipe } from './ast.js';
import { lex, type Token } from './lexer.js';
import { lineCol, TemplateError } from './template-error.js';

export interface ParseOptions {
  /** Whether a function name exists; Go refuses unknown functions at parse time. */
  hasFunction(name: string): boolean;
}

type EndKind = 'end' | 'else' | 'eof';

/** Parses a Go text/template source into a tree (no define/template/block: one anonymous template). */
export function parse(src: string, options: ParseOptions): ListNode {
  return new Parser(src, lex(src), options).parseTemplate();
}

class Parser {
  private i = 0;
  private vars: string[] = ['$'];
  private rangeDepth = 0;

  constructor(
    private readonly src: string,
    private readonly tokens: Token[],
    private readonly options: ParseOptions,
  ) {}

  parseTemplate(): ListNode {
    const { list, end } = this.parseList();
    if (end.kind !== 'eof') this.fail(end.pos, `unexpected {{${end.kind}}}`);
    return list;
  }

  private fail(pos: number, msg: string): never {
    throw new TemplateError('parse', `template: :${lineCol(this.src, pos).line}: ${msg}`);
  }

  private peek(): Token {
    return this.tokens[this.i] ?? { type: 'eof', value: '', pos: this.src.length };
  }

  private next(): Token {
    const t = this.peek();
    if (this.i < this.tokens.length) this.i++;
    return t;
  }

  private peekNonSpace(): Token {
    while (this.peek().type === 'space') this.i++;
    return this.peek();
  }

  private nextNonSpace(): Token {
    this.peekNonSpace();
    return this.next();
  }

  private expectRight(context: string): void {
    const t = this.nextNonSpace();
    if (t.type !== 'right') this.fail(t.pos, `unexpected "${t.value}" in ${context}`);
  }

  /** Parses nodes up to `{{end}}`, `{{else…}}` or the end of input (which it reports, not consumes past). */
  private parseList(): { list: ListNode; end: { kind: EndKind; pos: number } } {
    const list: ListNode = [];
    for (;;) {
      const t = this.next();
      if (t.type === 'eof') return { list, end: { kind: 'eof', pos: t.pos } };
      if (t.type === 'text') {
        list.push({ type: 'text', text: t.value });
        continue;
      }
      // t is a left delimiter.
      const kw = this.peekNonSpace();
      if (kw.type === 'ident') {
        switch (kw.value) {
          case 'end':
            this.next();
            this.expectRight('end');
            return { list, end: { kind: 'end', pos: kw.pos } };
          case 'else':
            this.next();
            return { list, end: { kind: 'else', pos: kw.pos } };
          case 'if':
          case 'with':
          case 'range':
            this.next();
            list.push(this.parseControl(kw.value, kw.pos));
            continue;
          case 'break':
          case 'continue':
            this.next();
            if (this.rangeDepth === 0) this.fail(kw.pos, `{{${kw.value}}} outside {{range}}`);
            this.expectRight(kw.value);
            list.push({ type: kw.value, pos: kw.pos });
            continue;
          case 'define':
          case 'template':
          case 'block':
            this.fail(kw.pos, `{{${kw.value}}} is not supported in ApplicationSet templates`);
            break;
          default:
            break;
        }
      }
      const pipe = this.parsePipeline('command', true);
      list.push({ type: 'action', pipe, pos: kw.pos });
    }
  }

  private parseControl(kind: 'if' | 'with' | 'range', pos: number): Node {
    const mark = this.vars.length;
    const pipe = this.parsePipeline(kind, true);
    if (kind === 'range') this.rangeDepth++;
    const body = this.parseList();
    if (kind === 'range') this.rangeDepth--;
    let elseList: ListNode | undefined;
    if (body.end.kind === 'eof') this.fail(body.end.pos, 'unexpected EOF');
    if (body.end.kind === 'else') {
      const t = this.peekNonSpace();
      // `{{else if …}}` and `{{else with …}}` nest a control of the same kind in the else branch.
      if (
        (kind === 'if' && t.type === 'ident' && t.value === 'if') ||
        (kind === 'with' && t.type === 'ident' && t.value === 'with')
      ) {
        this.next();
        const nested = this.parseControl(kind, t.pos);
        elseList = [nested];
        this.vars.length = mark;
        return { type: kind, pipe, list: body.list, elseList, pos };
      }
      this.expectRight('else');
      const rest = this.parseList();
      if (rest.end.kind !== 'end')
        this.fail(rest.end.pos, rest.end.kind === 'eof' ? 'unexpected EOF' : 'expected end; found {{else}}');
      elseList = rest.list;
    }
    this.vars.length = mark;
    return elseList
      ? { type: kind, pipe, list: body.list, elseList, pos }
      : { type: kind, pipe, list: body.list, pos };
  }

  /** A pipeline, with an optional declaration; ends at `}}` (top level) or `)` (parenthesised). */
  private parsePipeline(context: string, topLevel: boolean): Pipe {
    const start = this.peekNonSpace().pos;
    const decl: string[] = [];
    let isAssign = false;
    // Look ahead for `$x :=`, `$x =`, `$i, $e :=`.
    const save = this.i;
    const v1 = this.nextNonSpace();
    if (v1.type === 'var') {
      const t = this.nextNonSpace();
      if (t.type === 'declare' || t.type === 'assign') {
        decl.push(v1.value);
        isAssign = t.type === 'assign';
      } else if (t.type === 'comma' && (context === 'range' || context === 'if' || context === 'with')) {
        const v2 = this.nextNonSpace();
        const op = this.nextNonSpace();
        if (v2.type !== 'var' || (op.type !== 'declare' && op.type !== 'assign'))
          this.fail(t.pos, `too many declarations in ${context}`);
        if (context !== 'range') this.fail(t.pos, `too many declarations in ${context}`);
        decl.push(v1.value, v2.value);
        isAssign = op.type === 'assign';
      } else {
        this.i = save;
      }
    } else {
      this.i = save;
    }
    if (isAssign) {
      for (const d of decl) if (!this.vars.includes(d)) this.fail(start, `undefined variable "${d}"`);
    }
    const cmds: Command[] = [];
    for (;;) {
      const t = this.peekNonSpace();
      if ((topLevel && t.type === 'right') || (!topLevel && t.type === 'rparen')) {
        this.next();
        break;
      }
      if (t.type === 'eof') this.fail(t.pos, `unclosed action`);
      if (cmds.length > 0) {
        if (t.type !== 'pipe') this.fail(t.pos, `unexpected "${t.value}" in ${context}`);
        this.next();
      }
      cmds.push(this.parseCommand(context));
    }
    if (cmds.length === 0) this.fail(start, `missing value for ${context}`);
    if (!isAssign) this.vars.push(...decl);
    return { decl, isAssign, cmds, pos: start };
  }

  private parseCommand(context: string): Command {
    const start = this.peekNonSpace().pos;
    const args: Arg[] = [];
    for (;;) {
      const t = this.peekNonSpace();
      if (t.type === 'right' || t.type === 'rparen' || t.type === 'pipe' || t.type === 'eof') break;
      args.push(this.parseOperand(context));
      const after = this.peek();
      if (
        after.type !== 'space' &&
        after.type !== 'right' &&
        after.type !== 'rparen' &&
        after.type !== 'pipe'
      ) {
        this.fail(after.pos, `missing space? unexpected "${after.value}" in operand`);
      }
    }
    if (args.length === 0) this.fail(start, `empty command`);
    const end = this.peek().pos;
    return { args, pos: start, src: this.src.slice(start, end).trim() };
  }

  private parseOperand(context: string): Arg {
    let term = this.parseTerm(context);
    const path: string[] = [];
    const pos = this.peek().pos;
    while (this.peek().type === 'field') path.push(this.next().value);
    if (path.length === 0) return term;
    if (term.type === 'field') return { type: 'field', path: [...term.path, ...path], pos };
    if (term.type === 'variable')
      return { type: 'variable', name: term.name, path: [...term.path, ...path], pos };
    if (term.type === 'chain' || term.type === 'identifier' || term.type === 'pipe') {
      term = { type: 'chain', node: term, path, pos };
    } else {
      this.fail(this.peek().pos, `unexpected . after term "${term.type}"`);
    }
    return term;
  }

  private parseTerm(context: string): Arg {
    const t = this.nextNonSpace();
    switch (t.type) {
      case 'dot':
        return { type: 'dot' };
      case 'field':
        return { type: 'field', path: [t.value], pos: t.pos };
      case 'var':
        if (!this.vars.includes(t.value)) this.fail(t.pos, `undefined variable "${t.value}"`);
        return { type: 'variable', name: t.value, path: [], pos: t.pos };
      case 'string':
        return { type: 'string', value: t.value };
      case 'char': {
        const cp = t.value.codePointAt(0) ?? 0;
        return { type: 'number', text: `'${t.value}'`, int: BigInt(cp), float: cp, isChar: true };
      }
      case 'number':
        return this.number(t);
      case 'lparen': {
        const mark = this.vars.length;
        const pipe = this.parsePipeline('parenthesized pipeline', false);
        this.vars.length = mark;
        return { type: 'pipe', pipe };
      }
      case 'ident':
        if (t.value === 'true' || t.value === 'false') return { type: 'bool', value: t.value === 'true' };
        if (t.value === 'nil') return { type: 'nil' };
        if (!this.options.hasFunction(t.value)) this.fail(t.pos, `function "${t.value}" not defined`);
        return { type: 'identifier', name: t.value };
      case 'text':
      case 'left':
      case 'right':
      case 'space':
      case 'rparen':
      case 'pipe':
      case 'declare':
      case 'assign':
      case 'comma':
      case 'eof':
        return this.fail(t.pos, `unexpected "${t.value}" in ${context}`);
    }
  }

  private number(t: Token): Arg {
    const text = t.value.replace(/_/g, '');
    const neg = text.startsWith('-');
    const unsigned = text.replace(/^[+-]/, '');
    if (/^0[xX]/.test(unsigned) || /^0[bB]/.test(unsigned) || /^0[oO]/.test(unsigned)) {
      const n =
        BigInt(unsigned.toLowerCase().startsWith('0o') ? `0o${unsigned.slice(2)}` : unsigned) *
        (neg ? -1n : 1n);
      return { type: 'number', text: t.value, int: n, float: Number(n) };
    }
    if (/[.eE]/.test(unsigned)) {
      const f = Number(text);
      if (Number.isNaN(f)) this.fail(t.pos, `bad number syntax: "${t.value}"`);
      return { type: 'number', text: t.value, float: f, ...(Number.isInteger(f) && { int: BigInt(f) }) };
    }
    // A leading 0 means octal, as in Go.
    const n = /^0[0-7]+$/.test(unsigned) ? BigInt(`0o${unsigned.slice(1)}`) : BigInt(unsigned);
    const v = neg ? -n : n;
    return { type: 'number', text: t.value, int: v, float: Number(v) };
  }
}
