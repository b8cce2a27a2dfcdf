import { isCollection, isNode, LineCounter, parseAllDocuments, type Document } from 'yaml';
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
}

// Alias expansion is bounded so that a "billion laughs" document is refused, not expanded.
const MAX_ALIAS_COUNT = 100;

/**
 * Splits a file into its YAML documents (`---`). Documents that are empty or only comments are
 * skipped but keep their index, so `document` in an error counts every `---` the reader sees.
 * Repeated keys are refused: in a reviewed configuration the second one silently winning is a trap.
 */
export function readYamlDocuments(text: string): { documents: YamlDocument[]; problems: YamlProblem[] } {
  const counter = new LineCounter();
  const parsed = parseAllDocuments(text, { lineCounter: counter, uniqueKeys: true, prettyErrors: false });
  const docs: Document.Parsed[] = Array.isArray(parsed) ? parsed : [];
  const documents: YamlDocument[] = [];
  const problems: YamlProblem[] = [];
  const lineAt = (offset: number): number => counter.linePos(offset).line;
  docs.forEach((doc, index) => {
    const first = doc.errors[0];
    if (first) {
      problems.push({ index, line: lineAt(first.pos[0]), message: firstLine(first.message) });
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
          // A map value starts on the line after its key for block maps; the key's line reads better.
          const pair = isCollection(node) && 'items' in node ? findPairKeyLine(node, key, lineAt) : null;
          line = pair ?? lineAt(next.range[0]);
          node = next;
        }
        return line;
      },
    });
  });
  return { documents, problems };
}

function findPairKeyLine(
  node: { items: unknown[] },
  key: string | number,
  lineAt: (offset: number) => number,
): number | null {
  if (typeof key === 'number') return null;
  for (const item of node.items) {
    const k = (item as { key?: unknown }).key;
    if (isNode(k) && k.range && (k as { value?: unknown }).value === key) return lineAt(k.range[0]);
  }
  return null;
}

function firstLine(message: string): string {
  return message.split('\n')[0] ?? message;
}
