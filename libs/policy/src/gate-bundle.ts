import { evaluatePolicies, policyContext, type ObjectRef, type PolicyDecision } from './evaluate-policies.js';
import { allowsBreakGlass } from './fleet-scope.js';
import { type PolicySet } from './policy-set.js';
import { type KubeObject } from './resource-index.js';

/** One decision about one object of a bundle, as the hub records it and the agent reports it. */
export interface PolicyViolation {
  policy: string;
  binding: string;
  object: ObjectRef;
  action: PolicyDecision['action'];
  type: PolicyDecision['type'];
  message: string;
  /** The policy or its binding says `flotilla.dev/break-glass: allow`: an active break-glass lets this Deny through. */
  breakGlassAllowed: boolean;
}

/** What a set of policies says about a whole bundle, before it is released or applied. */
export interface BundleVerdict {
  /** False when any object is denied: nothing of the bundle may be released or applied. */
  allowed: boolean;
  denials: PolicyViolation[];
  warnings: PolicyViolation[];
  audits: PolicyViolation[];
}

export interface BundleGateOptions {
  /** The target's destination: the namespace of a namespaced object that names none. */
  namespace: string;
  /** Params objects (ConfigMaps or a paramKind's objects) besides those of the bundle. */
  params?: readonly unknown[];
  /** The live object when the caller knows it (the agent): the request is then an UPDATE. */
  oldObjectOf?: (object: KubeObject) => KubeObject | null;
}

function isKubeObject(o: unknown): o is KubeObject {
  return typeof o === 'object' && o !== null && typeof (o as KubeObject).kind === 'string';
}

/**
 * Evaluates every object of a bundle against a set, with the bundle's own CRDs and Namespaces and
 * the params in context, and sorts the decisions by action. Pure: the same call at the hub (before
 * release) and at the agent (before apply, with the live objects) gives the same answer.
 */
export function gateBundle(
  set: PolicySet,
  objects: readonly unknown[],
  options: BundleGateOptions,
): BundleVerdict {
  const verdict: BundleVerdict = { allowed: true, denials: [], warnings: [], audits: [] };
  if (set.bindings.length === 0) return verdict;
  const manifests = objects.filter(isKubeObject);
  const ctx = policyContext([...manifests, ...(options.params ?? [])]);
  for (const object of manifests) {
    const result = evaluatePolicies(
      set,
      { object, oldObject: options.oldObjectOf?.(object) ?? null, namespace: options.namespace },
      ctx,
    );
    for (const d of result.decisions) {
      const binding = set.bindings.find((b) => b.name === d.binding);
      const violation: PolicyViolation = {
        policy: d.policy,
        binding: d.binding,
        object: result.object,
        action: d.action,
        type: d.type,
        message: d.message,
        breakGlassAllowed:
          allowsBreakGlass(set.policies.get(d.policy)?.source) || allowsBreakGlass(binding?.source),
      };
      if (d.action === 'Deny') verdict.denials.push(violation);
      else if (d.action === 'Warn') verdict.warnings.push(violation);
      else verdict.audits.push(violation);
    }
  }
  verdict.allowed = verdict.denials.length === 0;
  return verdict;
}

/** `Deployment shop/web`: how a violation names its object in a message. */
export function describeObject(ref: ObjectRef): string {
  return `${ref.kind} ${ref.namespace ? `${ref.namespace}/` : ''}${ref.name}`;
}

/** One line a person reads: `policy forbid-registry (binding forbid-registry) denies Deployment shop/web: message`. */
export function describeViolation(v: PolicyViolation): string {
  const verb = v.action === 'Deny' ? 'denies' : v.action === 'Warn' ? 'warns about' : 'audits';
  return `policy ${v.policy} (binding ${v.binding}) ${verb} ${describeObject(v.object)}: ${v.message}`;
}
