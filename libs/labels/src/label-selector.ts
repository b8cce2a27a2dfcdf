import { z } from 'zod';
import { labelKeySchema, labelsSchema, labelValueSchema } from './label-syntax.js';

export const SELECTOR_OPERATORS = ['In', 'NotIn', 'Exists', 'DoesNotExist'] as const;

export const selectorOperatorSchema = z.enum(SELECTOR_OPERATORS, {
  error: (issue) =>
    `${JSON.stringify(issue.input)} is not a label selector operator (expected one of ${SELECTOR_OPERATORS.join(', ')})`,
});

const expressionSchema = z
  .strictObject({
    key: labelKeySchema,
    operator: selectorOperatorSchema,
    values: z.array(labelValueSchema).optional(),
  })
  .superRefine((expr, ctx) => {
    // The rules metav1.LabelSelectorAsSelector enforces.
    const count = expr.values?.length ?? 0;
    switch (expr.operator) {
      case 'In':
      case 'NotIn':
        if (count === 0)
          ctx.addIssue({
            code: 'custom',
            message: `operator ${expr.operator} needs at least one value`,
            path: ['values'],
          });
        break;
      case 'Exists':
      case 'DoesNotExist':
        if (count > 0)
          ctx.addIssue({
            code: 'custom',
            message: `operator ${expr.operator} takes no values`,
            path: ['values'],
          });
        break;
    }
  });

/**
 * A Kubernetes label selector over cluster labels: every matchLabels pair and every expression must
 * hold. Keys and values follow Kubernetes label syntax; In and NotIn need values, Exists and
 * DoesNotExist take none. The form Flotilla's own kinds and API requests hold.
 */
export const labelSelectorSchema = z.strictObject({
  matchLabels: labelsSchema.optional(),
  matchExpressions: z.array(expressionSchema).optional(),
});

export type LabelSelector = z.infer<typeof labelSelectorSchema>;

/**
 * A selector whose keys and values are any strings, operators and value counts checked: Argo CD
 * lets a clusters selector match the server URL, so an ApplicationSet's selectors are reviewed
 * with this rather than with label syntax. Expressions keep unknown fields, as Argo CD reads them.
 */
export const anyValueSelectorSchema = labelSelectorSchema.extend({
  matchLabels: z.record(z.string(), z.string()).optional(),
  matchExpressions: z
    .array(
      z
        .looseObject({
          key: z.string().min(1),
          operator: selectorOperatorSchema,
          values: z.array(z.string()).optional(),
        })
        .superRefine((expr, ctx) => {
          const count = expr.values?.length ?? 0;
          const needsValues = expr.operator === 'In' || expr.operator === 'NotIn';
          if (needsValues && count === 0)
            ctx.addIssue({
              code: 'custom',
              message: `operator ${expr.operator} needs at least one value`,
              path: ['values'],
            });
          if (!needsValues && count > 0)
            ctx.addIssue({
              code: 'custom',
              message: `operator ${expr.operator} takes no values`,
              path: ['values'],
            });
        }),
    )
    .optional(),
});

/**
 * A selector as the Kubernetes API server checks one in a ValidatingAdmissionPolicy or its binding
 * (`namespaceSelector`, `objectSelector`, `paramRef.selector`), with its own messages: strict, keys
 * non-empty, values any strings.
 */
export const apiServerLabelSelectorSchema = z.strictObject({
  matchLabels: z.record(z.string(), z.string()).optional(),
  matchExpressions: z
    .array(
      z
        .strictObject({
          key: z.string().min(1),
          operator: z.enum(['In', 'NotIn', 'Exists', 'DoesNotExist']),
          values: z.array(z.string()).optional(),
        })
        .refine((e) => (e.values ?? []).length > 0 === (e.operator === 'In' || e.operator === 'NotIn'), {
          message: 'In and NotIn need values; Exists and DoesNotExist take none',
          path: ['values'],
        }),
    )
    .optional(),
});

/**
 * A selector read as Argo CD's ApplicationSet controller reads one: only its shape is checked
 * (unknown fields kept, nulls allowed); operators and value counts are checked when it is compiled.
 */
export const looseLabelSelectorSchema = z.looseObject({
  matchLabels: z.record(z.string(), z.string()).nullish(),
  matchExpressions: z
    .array(
      z.looseObject({
        key: z.string(),
        operator: z.string(),
        values: z.array(z.string()).nullish(),
      }),
    )
    .nullish(),
});

/** Any selector `compileSelector` takes: a LabelSelector, or one read with looseLabelSelectorSchema. */
export type LooseLabelSelector = z.infer<typeof looseLabelSelectorSchema>;

/**
 * A selector that cannot be compiled or read. `path` locates it in its input (`spec.rollout.steps[1].selector`,
 * `query.selector`); the message is `path: detail`, as the generators' errors read.
 */
export class LabelSelectorError extends Error {
  override readonly name = 'LabelSelectorError';
  readonly code = 'invalid-selector';
  readonly path: string;
  /** The message without the path prefix. */
  readonly detail: string;

  constructor(detail: string, path: string) {
    super(path ? `${path}: ${detail}` : detail);
    this.detail = detail;
    this.path = path;
  }
}

/**
 * Kubernetes label-selector matching (matchLabels AND matchExpressions with In, NotIn, Exists,
 * DoesNotExist) over a flat string map. Like Argo CD's copy of LabelSelectorAsSelector, values are
 * not restricted to label syntax, so a selector can match a server URL.
 */
export function compileSelector(
  selector: LooseLabelSelector | null | undefined,
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
          throw new LabelSelectorError(`operator ${expr.operator} needs at least one value`, at);
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
          throw new LabelSelectorError(`operator ${expr.operator} takes no values`, at);
        }
        const exists = expr.operator === 'Exists';
        tests.push((labels) => Object.hasOwn(labels, expr.key) === exists);
        break;
      }
      default:
        throw new LabelSelectorError(
          `"${expr.operator}" is not a valid label selector operator (In, NotIn, Exists, DoesNotExist)`,
          `${at}.operator`,
        );
    }
  });
  return (labels) => tests.every((t) => t(labels));
}

/** True when the selector names no requirement at all. */
export function isEmptySelector(selector: LooseLabelSelector | null | undefined): boolean {
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
 * throws a LabelSelectorError naming it at `path`.
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

function bad(term: string, path: string, why: string): LabelSelectorError {
  return new LabelSelectorError(`cannot read "${term}": ${why}`, path);
}

/** One requirement of a label selector that a label set does not meet, in words. */
export interface UnmetRequirement {
  /** `matchLabels.env` or `matchExpressions[1]`. */
  field: string;
  /** The requirement as written: `env=prod`, `tier In (web, api)`, `canary DoesNotExist`. */
  requirement: string;
  /** What the labels hold instead: `env=staging`, `no "tier" label`. */
  actual: string;
}

/** Every requirement of `selector` that `labels` fails (empty: the selector matches). */
export function unmetRequirements(
  selector: LooseLabelSelector | null | undefined,
  labels: Record<string, string>,
): UnmetRequirement[] {
  if (selector == null) return [];
  const out: UnmetRequirement[] = [];
  const actual = (key: string) =>
    Object.hasOwn(labels, key) ? `${key}=${labels[key] ?? ''}` : `no "${key}" label`;
  for (const [key, value] of Object.entries(selector.matchLabels ?? {})) {
    if (labels[key] !== value || !Object.hasOwn(labels, key)) {
      out.push({ field: `matchLabels.${key}`, requirement: `${key}=${value}`, actual: actual(key) });
    }
  }
  (selector.matchExpressions ?? []).forEach((expr, i) => {
    const values = expr.values ?? [];
    const has = Object.hasOwn(labels, expr.key);
    const inSet = has && values.includes(labels[expr.key] ?? '');
    const met =
      expr.operator === 'In'
        ? inSet
        : expr.operator === 'NotIn'
          ? !inSet
          : expr.operator === 'Exists'
            ? has
            : expr.operator === 'DoesNotExist'
              ? !has
              : false;
    if (!met) {
      const requirement =
        values.length > 0
          ? `${expr.key} ${expr.operator} (${values.join(', ')})`
          : `${expr.key} ${expr.operator}`;
      out.push({ field: `matchExpressions[${i}]`, requirement, actual: actual(expr.key) });
    }
  });
  return out;
}
