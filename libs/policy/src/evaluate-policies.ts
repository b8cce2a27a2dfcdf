import { firstLine } from './cel/kubernetes-cel.js';
import { toCelValue } from './cel-value.js';
import { type CompiledBinding, type CompiledExpression, type CompiledPolicy } from './compile-policy.js';
import { type MatchRequest, type Operation } from './match-resources.js';
import { type ValidationAction } from './policy-schema.js';
import { type PolicySet } from './policy-set.js';
import { ResourceIndex, type KubeObject, type ResourceInfo } from './resource-index.js';

/** An object as a verdict names it. */
export interface ObjectRef {
  apiVersion: string;
  kind: string;
  namespace: string | null;
  name: string;
}

/**
 * What the policies may look up besides the object: CustomResourceDefinitions (resource names and
 * scope), Namespaces (for namespaceSelector and `namespaceObject`) and params objects. Built once
 * from every object at hand, then shared by every evaluation.
 */
export interface PolicyContext {
  resources: ResourceIndex;
  namespaces: ReadonlyMap<string, KubeObject>;
  /** Objects by `apiVersion/kind`, the candidates for a paramKind. */
  byKind: ReadonlyMap<string, readonly KubeObject[]>;
}

export function policyContext(objects: readonly unknown[]): PolicyContext {
  const namespaces = new Map<string, KubeObject>();
  const byKind = new Map<string, KubeObject[]>();
  for (const o of objects) {
    if (typeof o !== 'object' || o === null) continue;
    const obj = o as KubeObject;
    const key = `${String(obj.apiVersion)}/${String(obj.kind)}`;
    const same = byKind.get(key);
    if (same) same.push(obj);
    else byKind.set(key, [obj]);
    const name = obj.metadata?.name;
    if (obj.apiVersion === 'v1' && obj.kind === 'Namespace' && typeof name === 'string')
      namespaces.set(name, withNameLabel(obj, name));
  }
  return { resources: new ResourceIndex(objects), namespaces, byKind };
}

const NAME_LABEL = 'kubernetes.io/metadata.name';

/** The API server labels every Namespace with its own name; policies select on that label. */
function withNameLabel(ns: KubeObject, name: string): KubeObject {
  const metadata = ns.metadata ?? {};
  return { ...ns, metadata: { ...metadata, labels: { ...labelsOf(ns), [NAME_LABEL]: name } } };
}

/**
 * The namespace an object goes to. One the inputs do not declare exists in the cluster already, as
 * far as offline evaluation can tell: it is known by its name and automatic label alone.
 */
function namespaceOf(ctx: PolicyContext, name: string): KubeObject {
  return (
    ctx.namespaces.get(name) ??
    withNameLabel({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } }, name)
  );
}

export interface AdmissionInput {
  object: KubeObject;
  /** The live object when the caller knows it (an UPDATE); absent or null means a CREATE. */
  oldObject?: KubeObject | null;
  /** Where a namespaced object that names no namespace goes (the target's destination), as the agent defaults it. */
  namespace?: string;
  /** Who `request.userInfo` says is asking: the applier, empty by default. */
  username?: string;
  groups?: string[];
}

/** One thing a binding's validationActions do about one failed validation or evaluation error. */
export interface PolicyDecision {
  policy: string;
  binding: string;
  action: ValidationAction;
  /** A validation that returned false, or an error under failurePolicy Fail. */
  type: 'violation' | 'error';
  message: string;
  reason: string;
  /** The expression at fault, when one is. */
  expression: string | null;
  /** The params object the policy ran with, when it had one. */
  param: ObjectRef | null;
}

export interface AuditAnnotation {
  policy: string;
  binding: string;
  /** `<policy>/<key>`, as the API server writes it into the audit event. */
  key: string;
  value: string;
}

export interface AdmissionVerdict {
  object: ObjectRef;
  operation: Operation;
  /** False when any decision is a Deny. */
  allowed: boolean;
  decisions: PolicyDecision[];
  auditAnnotations: AuditAnnotation[];
  /** Errors swallowed by failurePolicy Ignore, kept so that a person can see why a policy said nothing. */
  ignoredErrors: { policy: string; binding: string; message: string }[];
}

function labelsOf(o: KubeObject | null | undefined): Record<string, string> {
  const labels = o?.metadata?.labels;
  return typeof labels === 'object' && labels !== null ? (labels as Record<string, string>) : {};
}

function str(v: unknown): string {
  return typeof v === 'string' ? v : '';
}

export function refOf(o: KubeObject): ObjectRef {
  const namespace = o.metadata?.namespace;
  return {
    apiVersion: str(o.apiVersion),
    kind: str(o.kind),
    namespace: typeof namespace === 'string' && namespace !== '' ? namespace : null,
    name: str(o.metadata?.name),
  };
}

class PolicyFailure extends Error {
  constructor(
    message: string,
    readonly expression: string | null,
  ) {
    super(message);
  }
}

function run(e: CompiledExpression, activation: Record<string, unknown>): unknown {
  try {
    return e.program(activation);
  } catch (err) {
    throw new PolicyFailure(
      `expression '${e.expression}' resulted in error: ${firstLine(err)}`,
      e.expression,
    );
  }
}

function runBool(e: CompiledExpression, activation: Record<string, unknown>): boolean {
  const v = run(e, activation);
  if (typeof v !== 'boolean')
    throw new PolicyFailure(`expression '${e.expression}' must return a bool, got ${typeof v}`, e.expression);
  return v;
}

/**
 * `variables`, evaluated lazily and at most once each, as Kubernetes does: a variable no
 * expression reads can fail without failing the policy.
 */
function lazyVariables(policy: CompiledPolicy, activation: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const v of policy.variables) {
    let state: { value: unknown } | { error: unknown } | null = null;
    Object.defineProperty(out, v.name, {
      enumerable: true,
      get() {
        state ??= (() => {
          try {
            return { value: run(v, activation) };
          } catch (error) {
            return { error };
          }
        })();
        if ('error' in state) throw state.error;
        return state.value;
      },
    });
  }
  return out;
}

function paramsFor(
  policy: CompiledPolicy,
  binding: CompiledBinding,
  request: ObjectRef,
  ctx: PolicyContext,
): KubeObject[] | null | PolicyFailure {
  if (policy.paramKind === null) return null;
  const ref = binding.source.spec.paramRef;
  const { apiVersion, kind } = policy.paramKind;
  if (ref === undefined)
    return new PolicyFailure(
      `policy '${policy.name}' has paramKind ${apiVersion} ${kind}; binding '${binding.name}' has no paramRef`,
      null,
    );
  const namespaced = ctx.resources.namespaced(apiVersion, kind);
  const namespace = namespaced ? (ref.namespace ?? request.namespace) : null;
  if (namespaced && namespace === null)
    return new PolicyFailure(
      `cannot find params ${kind} for cluster-scoped ${request.kind} '${request.name}': paramRef.namespace is not set`,
      null,
    );
  const select = binding.paramSelector;
  const found = (ctx.byKind.get(`${apiVersion}/${kind}`) ?? []).filter((p) => {
    const r = refOf(p);
    if (namespaced && r.namespace !== namespace) return false;
    return ref.name !== undefined ? r.name === ref.name : select(labelsOf(p));
  });
  if (found.length > 0) return found.sort((a, b) => (refOf(a).name < refOf(b).name ? -1 : 1));
  if ((ref.parameterNotFoundAction ?? 'Deny') === 'Allow') return [];
  const what = ref.name !== undefined ? `'${ref.name}'` : 'matching the selector';
  return new PolicyFailure(
    `no params found for policy binding with 'Deny' parameterNotFoundAction: no ${kind} ${what}${namespace === null ? '' : ` in namespace '${namespace}'`}`,
    null,
  );
}

/**
 * Evaluates every binding of `set` that matches the object, as the API server's
 * ValidatingAdmissionPolicy plugin would for the request that applies it: CREATE when no old
 * object is given, else UPDATE. Pure and synchronous; the expressions were compiled with the set.
 */
export function evaluatePolicies(
  set: PolicySet,
  input: AdmissionInput,
  ctx: PolicyContext,
): AdmissionVerdict {
  const object = input.object;
  const oldObject = input.oldObject ?? null;
  const operation: Operation = oldObject === null ? 'CREATE' : 'UPDATE';
  const written = refOf(object);
  const resource: ResourceInfo = ctx.resources.describe(written.apiVersion, written.kind);
  const ref: ObjectRef =
    resource.namespaced && written.namespace === null && input.namespace !== undefined
      ? { ...written, namespace: input.namespace }
      : written;
  const isNamespace = resource.group === '' && resource.kind === 'Namespace';
  const namespaceObject = isNamespace
    ? withNameLabel(object, ref.name)
    : ref.namespace !== null
      ? namespaceOf(ctx, ref.namespace)
      : null;
  const match: MatchRequest = {
    resource,
    operation,
    name: ref.name,
    objectLabels: labelsOf(object),
    oldObjectLabels: oldObject === null ? null : labelsOf(oldObject),
    namespaceLabels: namespaceObject === null ? null : labelsOf(namespaceObject),
  };
  const verdict: AdmissionVerdict = {
    object: ref,
    operation,
    allowed: true,
    decisions: [],
    auditAnnotations: [],
    ignoredErrors: [],
  };
  const base = {
    object: toCelValue(object),
    oldObject: toCelValue(oldObject),
    namespaceObject: resource.namespaced ? toCelValue(namespaceObject) : null,
    request: toCelValue({
      operation,
      kind: { group: resource.group, version: resource.version, kind: resource.kind },
      resource: { group: resource.group, version: resource.version, resource: resource.resource },
      requestKind: { group: resource.group, version: resource.version, kind: resource.kind },
      requestResource: { group: resource.group, version: resource.version, resource: resource.resource },
      name: ref.name,
      namespace: ref.namespace ?? '',
      userInfo: { username: input.username ?? '', groups: input.groups ?? [] },
      dryRun: false,
    }),
  };

  for (const binding of set.bindings) {
    const policy = set.policies.get(binding.policyName);
    if (policy === undefined || !policy.matches(match) || !binding.matches(match)) continue;
    const decide = (
      type: PolicyDecision['type'],
      message: string,
      reason: string,
      expression: string | null,
      param: ObjectRef | null,
    ): void => {
      for (const action of binding.actions)
        verdict.decisions.push({
          policy: policy.name,
          binding: binding.name,
          action,
          type,
          message,
          reason,
          expression,
          param,
        });
    };
    const fail = (err: PolicyFailure, param: ObjectRef | null): void => {
      if (policy.failurePolicy === 'Ignore')
        verdict.ignoredErrors.push({ policy: policy.name, binding: binding.name, message: err.message });
      else decide('error', err.message, 'InternalError', err.expression, param);
    };
    const params = paramsFor(policy, binding, ref, ctx);
    if (params instanceof PolicyFailure) {
      fail(params, null);
      continue;
    }
    for (const param of params ?? [null]) {
      const paramRef = param === null ? null : refOf(param);
      const activation: Record<string, unknown> = { ...base, params: toCelValue(param) };
      activation['variables'] = lazyVariables(policy, activation);
      try {
        evaluateOne(policy, binding, activation, paramRef, decide, verdict);
      } catch (err) {
        if (!(err instanceof PolicyFailure)) throw err;
        fail(err, paramRef);
      }
    }
  }
  verdict.allowed = !verdict.decisions.some((d) => d.action === 'Deny');
  return verdict;
}

function evaluateOne(
  policy: CompiledPolicy,
  binding: CompiledBinding,
  activation: Record<string, unknown>,
  param: ObjectRef | null,
  decide: (
    type: PolicyDecision['type'],
    message: string,
    reason: string,
    expression: string | null,
    param: ObjectRef | null,
  ) => void,
  verdict: AdmissionVerdict,
): void {
  // Any false condition skips the policy, even when another condition failed to evaluate.
  let conditionError: PolicyFailure | null = null;
  for (const c of policy.matchConditions) {
    try {
      if (!runBool(c, activation)) return;
    } catch (err) {
      if (!(err instanceof PolicyFailure)) throw err;
      conditionError ??= err;
    }
  }
  if (conditionError !== null) throw conditionError;

  for (const v of policy.validations) {
    if (runBool(v, activation)) continue;
    decide('violation', messageOf(v, activation), v.reason, v.expression, param);
  }
  for (const a of policy.auditAnnotations) {
    const value = run(a, activation);
    if (value === null) continue;
    if (typeof value !== 'string')
      throw new PolicyFailure(`valueExpression '${a.expression}' must return a string or null`, a.expression);
    verdict.auditAnnotations.push({
      policy: policy.name,
      binding: binding.name,
      key: `${policy.name}/${a.key}`,
      value,
    });
  }
}

/**
 * messageExpression first (a non-empty single-line string), else message, else the expression, as
 * the API server words it; a messageExpression that fails falls back instead of failing the policy.
 */
function messageOf(v: CompiledPolicy['validations'][number], activation: Record<string, unknown>): string {
  if (v.messageExpression !== null) {
    try {
      const m = v.messageExpression.program(activation);
      if (typeof m === 'string' && m.trim() !== '' && !m.includes('\n')) return m.trim();
    } catch {
      // fall through to the static message, as Kubernetes does
    }
  }
  return v.message ?? `failed expression: ${v.expression}`;
}
