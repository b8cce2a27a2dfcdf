import { fieldPath } from './api-error.js';

/**
 * Text PostgreSQL cannot store, found anywhere in plain data: a NUL character (`text` and `jsonb`
 * refuse it) or a lone UTF-16 surrogate (not Unicode, so not UTF-8). Either one reaching a query
 * makes it fail; finding them first lets the edge answer 400 naming the field instead.
 */
export interface UnstorableText {
  /**
   * Where, as `a.b[2].c` under `root` (a bad key is named by the path to it, made storable: its bad
   * characters shown as U+FFFD).
   */
  path: string;
  problem: 'NUL character' | 'lone surrogate';
}

const NUL = /\0/;
// A high surrogate not followed by a low one, or a low one not preceded by a high one.
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** The problem of one string, if any. */
export function textProblem(text: string): UnstorableText['problem'] | null {
  if (NUL.test(text)) return 'NUL character';
  if (LONE_SURROGATE.test(text)) return 'lone surrogate';
  return null;
}

/**
 * The first unstorable string (value or object key) in `value`, depth first, or null. Iterative, so
 * a deep value cannot exhaust the stack (bodies are depth-bounded before they get here anyway).
 */
export function findUnstorableText(value: unknown, root: readonly PropertyKey[] = []): UnstorableText | null {
  const stack: { value: unknown; path: readonly PropertyKey[] }[] = [{ value, path: root }];
  while (stack.length > 0) {
    const { value: v, path } = stack.pop()!;
    if (typeof v === 'string') {
      const problem = textProblem(v);
      if (problem) return { path: storable(fieldPath(path)), problem };
    } else if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) stack.push({ value: v[i], path: [...path, i] });
    } else if (typeof v === 'object' && v !== null) {
      const entries: [string, unknown][] = Object.entries(v);
      for (let i = entries.length - 1; i >= 0; i--) {
        const [key, child] = entries[i]!;
        const problem = textProblem(key);
        if (problem) return { path: storable(fieldPath([...path, key])), problem };
        stack.push({ value: child, path: [...path, key] });
      }
    }
  }
  return null;
}

/** `text` with each NUL and lone surrogate replaced by U+FFFD, so that it can be stored and shown. */
export function storable(text: string): string {
  return text.replace(new RegExp(LONE_SURROGATE.source, 'g'), '\uFFFD').replaceAll('\0', '\uFFFD');
}

/** The sentence an API answers with for `found` (the caller adds what was being read). */
export function unstorableTextMessage(found: UnstorableText): string {
  return `${found.path}: contains a ${found.problem}, which cannot be stored; send valid Unicode text without U+0000`;
}
