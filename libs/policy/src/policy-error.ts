/** Why a policy or binding is refused; stable codes so callers branch on them, never on the message. */
export type PolicyErrorCode = 'not-a-policy' | 'invalid-field' | 'invalid-expression' | 'unknown-policy';

/**
 * One problem in a ValidatingAdmissionPolicy or binding: the object, the field path inside it
 * (`spec.validations[0].expression`), the expression when one is at fault, and what to do.
 */
export interface PolicyError {
  code: PolicyErrorCode;
  kind: string;
  name: string | null;
  path: (string | number)[];
  expression: string | null;
  message: string;
}

/** A PolicyError of a set: `document` is the index of the offending one among those compiled together. */
export interface PolicySetError extends PolicyError {
  document: number;
}

/** `spec.validations[0].expression`, the form Kubernetes uses in its own field errors. */
export function formatPolicyPath(path: readonly (string | number)[]): string {
  return path.map((p, i) => (typeof p === 'number' ? `[${p}]` : i === 0 ? p : `.${p}`)).join('');
}
