import {
  compileBinding,
  compilePolicy,
  type CompiledBinding,
  type CompiledPolicy,
} from './compile-policy.js';
import { type PolicySetError } from './policy-error.js';
import { POLICY_API_VERSION } from './policy-schema.js';

export const POLICY_KINDS = ['ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding'] as const;

/** Policies by name and their bindings in name order: what `evaluatePolicies` runs. */
export interface PolicySet {
  policies: ReadonlyMap<string, CompiledPolicy>;
  bindings: readonly CompiledBinding[];
}

/** Whether a parsed document is a policy or a binding (any other object is a manifest, a param...). */
export function isPolicyDocument(doc: unknown): boolean {
  const d = doc as { apiVersion?: unknown; kind?: unknown } | null;
  return (
    typeof d === 'object' &&
    d !== null &&
    typeof d.apiVersion === 'string' &&
    d.apiVersion.startsWith('admissionregistration.k8s.io/') &&
    (POLICY_KINDS as readonly unknown[]).includes(d.kind)
  );
}

/**
 * Compiles every policy and binding among `documents` (other objects are skipped) into a set. Any
 * error leaves the offending object out and is returned with the index of its document, so a
 * caller can name the file; a caller that gates on policies refuses the whole set when `errors` is
 * not empty, so a broken policy never passes for an absent one.
 */
export function compilePolicySet(documents: readonly unknown[]): {
  set: PolicySet;
  errors: PolicySetError[];
} {
  const errors: PolicySetError[] = [];
  const policies = new Map<string, CompiledPolicy>();
  const bindings: { binding: CompiledBinding; document: number }[] = [];
  const policyNames = new Set<string>();
  documents.forEach((doc, document) => {
    if (!isPolicyDocument(doc)) return;
    const d = doc as { apiVersion: string; kind: string; metadata?: { name?: unknown } };
    if (d.apiVersion !== POLICY_API_VERSION) {
      errors.push({
        code: 'not-a-policy',
        kind: d.kind,
        name: typeof d.metadata?.name === 'string' ? d.metadata.name : null,
        path: ['apiVersion'],
        expression: null,
        message: `apiVersion '${d.apiVersion}' is not read: write ${POLICY_API_VERSION}`,
        document,
      });
      return;
    }
    if (d.kind === 'ValidatingAdmissionPolicy') {
      const name = d.metadata?.name;
      if (typeof name === 'string') policyNames.add(name);
      const r = compilePolicy(doc);
      if (r.ok) policies.set(r.ok.name, r.ok);
      errors.push(...r.errors.map((e) => ({ ...e, document })));
    } else {
      const r = compileBinding(doc);
      if (r.ok) bindings.push({ binding: r.ok, document });
      errors.push(...r.errors.map((e) => ({ ...e, document })));
    }
  });
  for (const { binding: b, document } of bindings)
    if (!policyNames.has(b.policyName))
      errors.push({
        code: 'unknown-policy',
        kind: 'ValidatingAdmissionPolicyBinding',
        name: b.name,
        path: ['spec', 'policyName'],
        expression: null,
        message: `no ValidatingAdmissionPolicy named '${b.policyName}' among the policies`,
        document,
      });
  const sorted = bindings
    .map(({ binding }) => binding)
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return { set: { policies, bindings: sorted }, errors };
}
