import { type LabelSelector } from './application-set.js';
import { GeneratorError } from './generator-error.js';

/**
 * Kubernetes label-selector matching (matchLabels AND matchExpressions with In, NotIn, Exists,
 * DoesNotExist) over a flat string map. Like Argo CD's copy of LabelSelectorAsSelector, values are
 * not restricted to label syntax, so a selector can match a server URL.
 */
export function compileSelector(
  selector: LabelSelector | null | undefined,
  path: string,
): (labels: Record<string, string>) => boolean {
  if (selector == null) return () => true;
  const tests: ((labels: Record<string, string>) => boolean)[] = [];
  for (const [key, value] of Object.entries(selector.matchLabels ?? {})) {
    tests.push((labels) => Object.hasOwn(labels, key) && labels[key] === value);
  }
  (selector.matchExpressions ?? []).forEach((expr, i) => {
    const values = expr.values ?? [];
    const at = `${path}.matchExpressions[${i}]`;
    switch (expr.operator) {
      case 'In':
      case 'NotIn': {
        if (values.length === 0) {
          throw new GeneratorError(
            'INVALID_SELECTOR',
            `operator ${expr.operator} needs at least one value`,
            at,
          );
        }
        const set = new Set(values);
        const isIn = expr.operator === 'In';
        tests.push((labels) => {
          const has = Object.hasOwn(labels, expr.key) && set.has(labels[expr.key] ?? '');
          return isIn ? has : !has;
        });
        break;
      }
      case 'Exists':
      case 'DoesNotExist': {
        if (values.length > 0) {
          throw new GeneratorError('INVALID_SELECTOR', `operator ${expr.operator} takes no values`, at);
        }
        const exists = expr.operator === 'Exists';
        tests.push((labels) => Object.hasOwn(labels, expr.key) === exists);
        break;
      }
      default:
        throw new GeneratorError(
          'INVALID_SELECTOR',
          `"${expr.operator}" is not a valid label selector operator (In, NotIn, Exists, DoesNotExist)`,
          `${at}.operator`,
        );
    }
  });
  return (labels) => tests.every((t) => t(labels));
}

/** True when the selector names no requirement at all. */
export function isEmptySelector(selector: LabelSelector | null | undefined): boolean {
  return (
    selector == null ||
    (Object.keys(selector.matchLabels ?? {}).length === 0 && (selector.matchExpressions ?? []).length === 0)
  );
}

const KEY = /^([a-z0-9]([-a-z0-9.]*[a-z0-9])?\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const SET_TERM = /^(!)?\s*([^\s!=,()]+)\s+(in|notin)\s*\(([^)]*)\)$/;
const EQUALITY_TERM = /^([^\s!=,()]+)\s*(==|=|!=)\s*([^\s!=,()]*)$/;
const EXISTS_TERM = /^(!)?\s*([^\s!=,()]+)$/;

/**
 * A selector written as `kubectl -l` takes it (`env=prod,tier!=edge,region in (eu,us),!legacy`),
 * as a LabelSelector for `compileSelector`. Every requirement must hold (AND). An unreadable term
 * throws a GeneratorError naming it at `path`.
 */
export function parseSelectorText(text: string, path: string): LabelSelector {
  const matchLabels: Record<string, string> = {};
  const matchExpressions: NonNullable<LabelSelector['matchExpressions']> = [];
  for (const raw of splitTerms(text, path)) {
    const term = raw.trim();
    if (term === '') continue;
    let m = SET_TERM.exec(term);
    if (m) {
      const values = (m[4] ?? '')
        .split(',')
        .map((v) => v.trim())
        .filter((v) => v !== '');
      if (m[1]) throw bad(term, path, '"!" goes only before a bare key');
      checkKey(m[2] ?? '', term, path);
      matchExpressions.push({ key: m[2] ?? '', operator: m[3] === 'in' ? 'In' : 'NotIn', values });
      continue;
    }
    m = EQUALITY_TERM.exec(term);
    if (m) {
      const key = m[1] ?? '';
      checkKey(key, term, path);
      if (m[2] === '!=') matchExpressions.push({ key, operator: 'NotIn', values: [m[3] ?? ''] });
      else if (Object.hasOwn(matchLabels, key) && matchLabels[key] !== m[3])
        matchExpressions.push({ key, operator: 'In', values: [m[3] ?? ''] });
      else matchLabels[key] = m[3] ?? '';
      continue;
    }
    m = EXISTS_TERM.exec(term);
    if (m) {
      checkKey(m[2] ?? '', term, path);
      matchExpressions.push({ key: m[2] ?? '', operator: m[1] ? 'DoesNotExist' : 'Exists' });
      continue;
    }
    throw bad(term, path, 'expected key=value, key!=value, key in (a,b), key notin (a,b), key or !key');
  }
  const selector: LabelSelector = { matchLabels, matchExpressions };
  compileSelector(selector, path); // the same checks as a selector written in YAML (In needs values)
  return selector;
}

/** Splits on the commas between terms, not those inside `in (a,b)`. */
function splitTerms(text: string, path: string): string[] {
  const terms: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '(') depth++;
    else if (c === ')') depth--;
    else if (c === ',' && depth === 0) {
      terms.push(text.slice(start, i));
      start = i + 1;
    }
    if (depth < 0 || depth > 1) throw bad(text, path, 'unbalanced parentheses');
  }
  if (depth !== 0) throw bad(text, path, 'unbalanced parentheses');
  terms.push(text.slice(start));
  return terms;
}

function checkKey(key: string, term: string, path: string): void {
  if (!KEY.test(key) || key.length > 316) throw bad(term, path, `"${key}" is not a valid label key`);
}

function bad(term: string, path: string, why: string): GeneratorError {
  return new GeneratorError('INVALID_SELECTOR', `cannot read "${term}": ${why}`, path);
}
