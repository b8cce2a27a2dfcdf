import { lineCol, TemplateError } from './template-error.js';

export type TokenType =
  | 'text'
  | 'left'
  | 'right'
  | 'space'
  | 'ident'
  | 'field'
  | 'var'
  | 'dot'
  | 'string'
  | 'char'
  | 'number'
  | 'lparen'
  | 'rparen'
  | 'pipe'
  | 'declare'
  | 'assign'
  | 'comma'
  | 'eof';

export interface Token {
  type: TokenType;
  /** Decoded value: text, identifier, field or variable name (without `.`), string contents, number text. */
  value: string;
  pos: number;
}

const SPACE = new Set([' ', '\t', '\r', '\n']);

function isAlnum(ch: string | undefined): boolean {
  return ch !== undefined && /[\p{L}\p{Nd}_]/u.test(ch);
}

/**
 * Splits a Go text/template source into tokens: text outside actions, and inside `{{ }}` the
 * operands and punctuation. Trim markers (`{{- `, ` -}}`) are applied here to the adjacent text,
 * and comments (`{{/* … *\/}}`) are dropped.
 */
export function lex(src: string): Token[] {
  const tokens: Token[] = [];
  let pos = 0;
  let trimNextText = false;
  const fail = (at: number, msg: string): never => {
    throw new TemplateError('parse', `template: :${lineCol(src, at).line}: ${msg}`);
  };
  const pushText = (text: string, at: number): void => {
    if (trimNextText) text = text.replace(/^[ \t\r\n]+/, '');
    trimNextText = false;
    if (text !== '') tokens.push({ type: 'text', value: text, pos: at });
  };

  while (pos < src.length) {
    const open = src.indexOf('{{', pos);
    if (open < 0) {
      pushText(src.slice(pos), pos);
      break;
    }
    let text = src.slice(pos, open);
    let inner = open + 2;
    if (src[inner] === '-' && SPACE.has(src[inner + 1] ?? '')) {
      text = text.replace(/[ \t\r\n]+$/, '');
      inner += 2;
    }
    pushText(text, pos);
    // A comment must fill the whole action.
    let afterSpace = inner;
    while (SPACE.has(src[afterSpace] ?? '')) afterSpace++;
    if (src.startsWith('/*', afterSpace)) {
      const close = src.indexOf('*/', afterSpace + 2);
      if (close < 0) fail(open, 'unclosed comment');
      let end = close + 2;
      const rest = src.slice(end);
      const m = /^([ \t\r\n]*)(-?)}}/.exec(rest);
      if (!m) fail(open, 'comment ends before closing delimiter');
      if (m?.[2] === '-') {
        if (m[1] === '') fail(open, 'comment ends before closing delimiter');
        trimNextText = true;
      }
      end += m?.[0].length ?? 0;
      pos = end;
      continue;
    }
    tokens.push({ type: 'left', value: '{{', pos: open });
    pos = lexAction(src, inner, tokens, fail, () => {
      trimNextText = true;
    });
  }
  tokens.push({ type: 'eof', value: '', pos: src.length });
  return tokens;
}

function lexAction(
  src: string,
  start: number,
  tokens: Token[],
  fail: (at: number, msg: string) => never,
  trimAfter: () => void,
): number {
  let pos = start;
  let parens = 0;
  for (;;) {
    if (pos >= src.length) fail(start, 'unclosed action');
    const ch = src[pos] ?? '';
    // Right delimiter, with an optional trim marker preceded by a space.
    if (SPACE.has(ch)) {
      let end = pos;
      while (SPACE.has(src[end] ?? '')) end++;
      if (src.startsWith('-}}', end)) {
        tokens.push({ type: 'right', value: '}}', pos: end });
        trimAfter();
        return end + 3;
      }
      tokens.push({ type: 'space', value: ' ', pos });
      pos = end;
      continue;
    }
    if (src.startsWith('}}', pos)) {
      if (parens > 0) fail(pos, 'unclosed left paren');
      tokens.push({ type: 'right', value: '}}', pos });
      return pos + 2;
    }
    const at = pos;
    switch (ch) {
      case '(':
        parens++;
        tokens.push({ type: 'lparen', value: '(', pos: at });
        pos++;
        continue;
      case ')':
        parens--;
        if (parens < 0) fail(at, `unexpected right paren`);
        tokens.push({ type: 'rparen', value: ')', pos: at });
        pos++;
        continue;
      case '|':
        tokens.push({ type: 'pipe', value: '|', pos: at });
        pos++;
        continue;
      case ',':
        tokens.push({ type: 'comma', value: ',', pos: at });
        pos++;
        continue;
      case '=':
        tokens.push({ type: 'assign', value: '=', pos: at });
        pos++;
        continue;
      case ':':
        if (src[pos + 1] !== '=') fail(at, 'expected :=');
        tokens.push({ type: 'declare', value: ':=', pos: at });
        pos += 2;
        continue;
      case '"': {
        const { value, end } = lexQuoted(src, pos, '"', fail);
        tokens.push({ type: 'string', value, pos: at });
        pos = end;
        continue;
      }
      case '`': {
        const close = src.indexOf('`', pos + 1);
        if (close < 0) fail(at, 'unterminated raw quoted string');
        tokens.push({ type: 'string', value: src.slice(pos + 1, close), pos: at });
        pos = close + 1;
        continue;
      }
      case "'": {
        const { value, end } = lexQuoted(src, pos, "'", fail);
        if ([...value].length !== 1) fail(at, `malformed character constant: ${src.slice(pos, end)}`);
        tokens.push({ type: 'char', value, pos: at });
        pos = end;
        continue;
      }
      case '$': {
        let end = pos + 1;
        while (isAlnum(src[end])) end++;
        tokens.push({ type: 'var', value: src.slice(pos, end), pos: at });
        pos = end;
        continue;
      }
      case '.': {
        if (/[0-9]/.test(src[pos + 1] ?? '')) break;
        let end = pos + 1;
        while (isAlnum(src[end])) end++;
        if (end === pos + 1) tokens.push({ type: 'dot', value: '.', pos: at });
        else tokens.push({ type: 'field', value: src.slice(pos + 1, end), pos: at });
        pos = end;
        continue;
      }
      default:
        break;
    }
    if (/[0-9+\-.]/.test(ch)) {
      const m =
        /^[+-]?(0[xX][0-9a-fA-F_]+|0[bB][01_]+|0[oO][0-7_]+|(\d[\d_]*)?\.?\d[\d_]*([eE][+-]?\d+)?|\d[\d_]*\.)/.exec(
          src.slice(pos),
        );
      if (!m || m[0] === '' || m[0] === '+' || m[0] === '-')
        fail(at, `bad number syntax: "${src.slice(pos, pos + 10)}"`);
      const text = m?.[0] ?? '';
      if (isAlnum(src[pos + text.length]))
        fail(at, `bad number syntax: "${text}${src[pos + text.length] ?? ''}"`);
      tokens.push({ type: 'number', value: text, pos: at });
      pos += text.length;
      continue;
    }
    if (isAlnum(ch)) {
      let end = pos;
      while (isAlnum(src[end])) end++;
      tokens.push({ type: 'ident', value: src.slice(pos, end), pos: at });
      pos = end;
      continue;
    }
    fail(at, `unexpected "${ch}" in command`);
  }
}

/** A Go interpreted string or character literal, decoded (strconv.Unquote). */
function lexQuoted(
  src: string,
  start: number,
  quote: string,
  fail: (at: number, msg: string) => never,
): { value: string; end: number } {
  let out = '';
  let pos = start + 1;
  for (;;) {
    const ch = src[pos];
    if (ch === undefined || ch === '\n') fail(start, 'unterminated quoted string');
    if (ch === quote) return { value: out, end: pos + 1 };
    if (ch !== '\\') {
      out += ch;
      pos++;
      continue;
    }
    const esc = src[pos + 1] ?? '';
    const simple: Record<string, string> = {
      a: '\x07',
      b: '\b',
      f: '\f',
      n: '\n',
      r: '\r',
      t: '\t',
      v: '\v',
      '\\': '\\',
      '"': '"',
      "'": "'",
    };
    const mapped = simple[esc];
    if (mapped !== undefined) {
      out += mapped;
      pos += 2;
      continue;
    }
    const hexLen = esc === 'x' ? 2 : esc === 'u' ? 4 : esc === 'U' ? 8 : 0;
    if (hexLen > 0) {
      const hex = src.slice(pos + 2, pos + 2 + hexLen);
      if (!new RegExp(`^[0-9a-fA-F]{${hexLen}}$`).test(hex)) fail(start, 'invalid syntax');
      out += String.fromCodePoint(parseInt(hex, 16));
      pos += 2 + hexLen;
      continue;
    }
    if (/[0-7]/.test(esc)) {
      const oct = src.slice(pos + 1, pos + 4);
      if (!/^[0-7]{3}$/.test(oct)) fail(start, 'invalid syntax');
      out += String.fromCharCode(parseInt(oct, 8));
      pos += 4;
      continue;
    }
    fail(start, 'invalid syntax');
  }
}
