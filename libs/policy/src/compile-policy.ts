import { compileSelector } from '@flotilla/labels';
import { type z } from 'zod';
import { compileExpression, type CelProgram } from './cel/kubernetes-cel.js';
import { compileMatch, type Matcher } from './match-resources.js';
import { type PolicyError } from './policy-error.js';
import {
  validatingAdmissionPolicyBindingSchema,
  validatingAdmissionPolicySchema,
  type ValidatingAdmissionPolicy,
  type ValidatingAdmissionPolicyBinding,
  type ValidationAction,
} from './policy-schema.js';

export interface CompiledExpression {
  expression: string;
  program: CelProgram;
}

export interface CompiledValidation extends CompiledExpression {
  message: string | null;
  messageExpression: CompiledExpression | null;
  reason: string;
}

/** A policy whose every expression compiled: evaluating it never parses again. */
export interface CompiledPolicy {
  name: string;
  source: ValidatingAdmissionPolicy;
  failurePolicy: 'Fail' | 'Ignore';
  paramKind: { apiVersion: string; kind: string } | null;
  matches: Matcher;
  matchConditions: (CompiledExpression & { name: string })[];
  variables: (CompiledExpression & { name: string })[];
  validations: CompiledValidation[];
  auditAnnotations: (CompiledExpression & { key: string })[];
}

export interface CompiledBinding {
  name: string;
  source: ValidatingAdmissionPolicyBinding;
  policyName: string;
  actions: ValidationAction[];
  matches: Matcher;
  /** `paramRef.selector` compiled (everything when the binding names its params instead). */
  paramSelector: (labels: Record<string, string>) => boolean;
}

export type Compiled<T> = { ok: T; errors: [] } | { ok: null; errors: PolicyError[] };

type Path = (string | number)[];

function nameOf(doc: unknown): string | null {
  const name = (doc as { metadata?: { name?: unknown } } | null)?.metadata?.name;
  return typeof name === 'string' ? name : null;
}

function schemaErrors(kind: string, doc: unknown, issues: readonly z.core.$ZodIssue[]): PolicyError[] {
  const out: PolicyError[] = [];
  for (const issue of issues) {
    const path = issue.path.map((p) => (typeof p === 'number' ? p : String(p)));
    const base = { code: 'invalid-field' as const, kind, name: nameOf(doc), expression: null };
    if (issue.code === 'unrecognized_keys')
      for (const key of issue.keys)
        out.push({ ...base, path: [...path, key], message: `unknown field '${key}'` });
    else if (issue.code === 'invalid_type' && 'input' in issue && issue.input === undefined)
      out.push({ ...base, path, message: `required field is missing (expected ${issue.expected})` });
    else out.push({ ...base, path, message: issue.message });
  }
  return out;
}

const EXPRESSION_FIELDS: [list: string, fields: string[]][] = [
  ['variables', ['expression']],
  ['matchConditions', ['expression']],
  ['validations', ['expression', 'messageExpression']],
  ['auditAnnotations', ['valueExpression']],
];

/**
 * The expressions of a policy the schema refused, compiled all the same, so that one pass names
 * every problem as the API server does (a typo in a field does not hide a broken expression).
 */
function expressionErrors(doc: unknown): PolicyError[] {
  const spec = (doc as { spec?: Record<string, unknown> } | null)?.spec;
  if (typeof spec !== 'object' || spec === null) return [];
  const out: PolicyError[] = [];
  for (const [list, fields] of EXPRESSION_FIELDS) {
    const items = spec[list];
    if (!Array.isArray(items)) continue;
    items.forEach((item: unknown, i) => {
      for (const field of fields) {
        const expression = (item as Record<string, unknown> | null)?.[field];
        if (typeof expression !== 'string' || expression === '') continue;
        const r = compileExpression(expression);
        if ('error' in r)
          out.push({
            code: 'invalid-expression',
            kind: 'ValidatingAdmissionPolicy',
            name: nameOf(doc),
            path: ['spec', list, i, field],
            expression,
            message: r.error,
          });
      }
    });
  }
  return out;
}

/**
 * Checks a ValidatingAdmissionPolicy as the API server would on create (schema, unknown fields,
 * every expression parsed and type-checked, variables defined before use) and compiles it once.
 */
export function compilePolicy(doc: unknown): Compiled<CompiledPolicy> {
  const parsed = validatingAdmissionPolicySchema.safeParse(doc);
  if (!parsed.success)
    return {
      ok: null,
      errors: [
        ...schemaErrors('ValidatingAdmissionPolicy', doc, parsed.error.issues),
        ...expressionErrors(doc),
      ],
    };
  const source = parsed.data;
  const name = source.metadata.name;
  const spec = source.spec;
  const errors: PolicyError[] = [];
  const compile = (expression: string, path: Path, defined: ReadonlySet<string>): CompiledExpression => {
    const undefinedVariable = [...expression.matchAll(/\bvariables\.([A-Za-z_][A-Za-z0-9_]*)/g)]
      .map((m) => m[1] ?? '')
      .find((v) => !defined.has(v));
    const result = compileExpression(expression);
    const problem =
      'error' in result
        ? result.error
        : undefinedVariable !== undefined
          ? `variables.${undefinedVariable} is not defined before this expression (spec.variables)`
          : null;
    if (problem !== null) {
      errors.push({
        code: 'invalid-expression',
        kind: 'ValidatingAdmissionPolicy',
        name,
        path,
        expression,
        message: problem,
      });
      return { expression, program: () => null };
    }
    return { expression, program: (result as { program: CelProgram }).program };
  };

  const declared = new Set<string>();
  const variables = (spec.variables ?? []).map((v, i) => {
    const compiled = {
      name: v.name,
      ...compile(v.expression, ['spec', 'variables', i, 'expression'], declared),
    };
    declared.add(v.name);
    return compiled;
  });
  const all = declared;
  const policy: CompiledPolicy = {
    name,
    source,
    failurePolicy: spec.failurePolicy ?? 'Fail',
    paramKind: spec.paramKind ?? null,
    matches: compileMatch(spec.matchConstraints, 'spec.matchConstraints', true),
    matchConditions: (spec.matchConditions ?? []).map((c, i) => ({
      name: c.name,
      ...compile(c.expression, ['spec', 'matchConditions', i, 'expression'], all),
    })),
    variables,
    validations: (spec.validations ?? []).map((v, i) => ({
      ...compile(v.expression, ['spec', 'validations', i, 'expression'], all),
      message: v.message ?? null,
      messageExpression:
        v.messageExpression === undefined
          ? null
          : compile(v.messageExpression, ['spec', 'validations', i, 'messageExpression'], all),
      reason: v.reason ?? 'Invalid',
    })),
    auditAnnotations: (spec.auditAnnotations ?? []).map((a, i) => ({
      key: a.key,
      ...compile(a.valueExpression, ['spec', 'auditAnnotations', i, 'valueExpression'], all),
    })),
  };
  return errors.length === 0 ? { ok: policy, errors: [] } : { ok: null, errors };
}

/** Checks a ValidatingAdmissionPolicyBinding's own fields (whether its policy exists is the set's question). */
export function compileBinding(doc: unknown): Compiled<CompiledBinding> {
  const parsed = validatingAdmissionPolicyBindingSchema.safeParse(doc);
  if (!parsed.success)
    return { ok: null, errors: schemaErrors('ValidatingAdmissionPolicyBinding', doc, parsed.error.issues) };
  const source = parsed.data;
  const binding: CompiledBinding = {
    name: source.metadata.name,
    source,
    policyName: source.spec.policyName,
    actions: source.spec.validationActions,
    matches: compileMatch(source.spec.matchResources, 'spec.matchResources', false),
    paramSelector: compileSelector(source.spec.paramRef?.selector ?? null, 'spec.paramRef.selector'),
  };
  return { ok: binding, errors: [] };
}
