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
