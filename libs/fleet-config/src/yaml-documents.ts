import {
  isCollection,
  isNode,
  isScalar,
  LineCounter,
  parseAllDocuments,
  type Document,
  type YAMLError,
} from 'yaml';
import { type FieldPath } from './field-path.js';

/** One YAML document of a file: its value, and where its fields are. */
export interface YamlDocument {
  index: number;
  /** Line (1-based) of the document's first content. */
  line: number;
  value: unknown;
  /** Line of the deepest existing node on `path`: the field itself, or its closest parent. */
  lineOf(path: FieldPath): number;
}

export interface YamlProblem {
  index: number;
  line: number;
  message: string;
  /** The offending line with a caret under the column, for a syntax error (see yamlErrorParts). */
  excerpt?: string;
}

/**
 * A YAML syntax error as one line to log and the excerpt a person reads: the `yaml` library's own
 * rendering (its `prettyErrors`) of the offending line with a caret under the column, e.g.
 *
 * ```
 *   template: x
 *   ^
 * ```
 */
export function yamlErrorParts(error: YAMLError): { message: string; line: number | null; excerpt: string } {
  const [first = error.message, ...rest] = error.message.split('\n');
  const excerpt = rest.join('\n').replace(/^\n+|\s+$/g, '');
  return {
    // The position is said once, as file:line by the caller, not again in the sentence.
    message: first.replace(/ at line \d+, column \d+:?$/, ''),
    line: error.linePos?.[0].line ?? null,
    excerpt,
  };
}

// Hostile input is refused before it costs anything: alias expansion is bounded (a "billion
// laughs" document), and so are a file's size and its nesting, far beyond any real configuration.
const MAX_ALIAS_COUNT = 100;
export const MAX_FILE_BYTES = 2 * 1024 * 1024;
export const MAX_DEPTH = 64;

/**
 * Splits a file into its YAML documents (`---`). Documents that are empty or only comments are
 * skipped but keep their index, so `document` in an error counts every `---` the reader sees.
 * Repeated keys are refused: in a reviewed configuration the second one silently winning is a trap.
 */
export function readYamlDocuments(text: string): { documents: YamlDocument[]; problems: YamlProblem[] } {
  if (Buffer.byteLength(text, 'utf8') > MAX_FILE_BYTES)
    return {
      documents: [],
      problems: [{ index: 0, line: 1, message: `file is larger than ${MAX_FILE_BYTES / 1024 / 1024} MiB` }],
    };
  const counter = new LineCounter();
  const parsed = parseAllDocuments(text, { lineCounter: counter, uniqueKeys: true, prettyErrors: true });
  const docs: Document.Parsed[] = Array.isArray(parsed) ? parsed : [];
  const documents: YamlDocument[] = [];
  const problems: YamlProblem[] = [];
  const lineAt = (offset: number): number => counter.linePos(offset).line;
  docs.forEach((doc, index) => {
    const first = doc.errors[0];
    if (first) {
      const { message, excerpt } = yamlErrorParts(first);
      problems.push({ index, line: lineAt(first.pos[0]), message, ...(excerpt && { excerpt }) });
      return;
    }
    const start = doc.contents?.range[0] ?? doc.range[0];
    let value: unknown;
    try {
      value = doc.toJS({ maxAliasCount: MAX_ALIAS_COUNT });
    } catch (err) {
      problems.push({ index, line: lineAt(start), message: (err as Error).message });
      return;
    }
    if (value === null || value === undefined) return;
    if (depthOf(value) > MAX_DEPTH) {
      problems.push({ index, line: lineAt(start), message: `nested deeper than ${MAX_DEPTH} levels` });
      return;
    }
    documents.push({
      index,
      line: lineAt(start),
      value,
      lineOf(path) {
        let node: unknown = doc.contents;
        let line = lineAt(start);
        for (const key of path) {
          if (!isCollection(node)) break;
          const next: unknown = node.get(key, true);
          if (!isNode(next) || !next.range) break;
          // A block map's value starts on the line after its key; the key's line is what people look for.
          line = (typeof key === 'string' ? keyLine(node.items, key, lineAt) : null) ?? lineAt(next.range[0]);
          node = next;
        }
        return line;
      },
    });
  });
  return { documents, problems };
}

function keyLine(items: unknown[], key: string, lineAt: (offset: number) => number): number | null {
  for (const item of items) {
    const k = (item as { key?: unknown }).key;
    if (isScalar(k) && k.range && k.value === key) return lineAt(k.range[0]);
  }
  return null;
}

/** Nesting depth of a parsed value, without recursion (the value may be deep enough to overflow it). */
function depthOf(value: unknown): number {
  let max = 0;
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length > 0) {
    const [v, d] = stack.pop() as [unknown, number];
    if (typeof v !== 'object' || v === null) continue;
    if (d + 1 > max) max = d + 1;
    if (max > MAX_DEPTH) return max;
    for (const child of Object.values(v)) stack.push([child, d + 1]);
  }
  return max;
}
