import {
  bindingScope,
  compileBinding,
  compilePolicy,
  SCOPE_ANNOTATIONS,
  type PolicyError,
  type ValidatingAdmissionPolicy,
  type ValidatingAdmissionPolicyBinding,
} from '@flotilla/policy';
import { type FleetErrorCode } from '../fleet-error.js';
import { type Issue } from '../issue.js';

/** A policy or binding of the fleet repository, valid (every expression compiles). */
export type ParsedFleetPolicy =
  | { kind: 'ValidatingAdmissionPolicy'; object: ValidatingAdmissionPolicy }
  | { kind: 'ValidatingAdmissionPolicyBinding'; object: ValidatingAdmissionPolicyBinding };

const CODES: Record<PolicyError['code'], FleetErrorCode> = {
  'not-a-policy': 'unknown-api-version',
  'invalid-field': 'invalid-field',
  'invalid-expression': 'invalid-expression',
  'unknown-policy': 'dangling-reference',
};

function toIssue(e: PolicyError): Issue {
  // The expression is quoted in the message so that a CI log alone says which one to fix.
  const message =
    e.expression === null ? e.message : `${e.message} in CEL expression ${JSON.stringify(e.expression)}`;
  return { code: CODES[e.code], path: e.path, message };
}

/**
 * Checks a ValidatingAdmissionPolicy or binding with the library that evaluates it, so what
 * `flotilla validate` and the hub accept is exactly what compiles.
 */
export function checkPolicyDocument(value: Record<string, unknown>): {
  parsed: ParsedFleetPolicy | null;
  issues: Issue[];
} {
  // Flotilla's annotations (scope, break-glass) are read by the same function the hub gates with.
  const annotationIssues = bindingScope(value).errors.map((e) => ({
    ...toIssue(e),
    ...(e.path.includes(SCOPE_ANNOTATIONS.clusterSelector) && { code: 'invalid-selector' as const }),
  }));
  if (value['kind'] === 'ValidatingAdmissionPolicy') {
    const r = compilePolicy(value);
    // A policy carries no scope (bindings do): only its break-glass annotation is read.
    const issues = annotationIssues.filter((i) => i.path.includes(SCOPE_ANNOTATIONS.breakGlass));
    const errors = [...r.errors.map(toIssue), ...issues];
    return {
      parsed: errors.length === 0 && r.ok ? { kind: 'ValidatingAdmissionPolicy', object: r.ok.source } : null,
      issues: errors,
    };
  }
  const r = compileBinding(value);
  const errors = [...r.errors.map(toIssue), ...annotationIssues];
  return {
    parsed:
      errors.length === 0 && r.ok ? { kind: 'ValidatingAdmissionPolicyBinding', object: r.ok.source } : null,
    issues: errors,
  };
}
