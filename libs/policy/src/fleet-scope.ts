import { compileSelector, LabelSelectorError, parseSelectorText } from '@flotilla/labels';
import { type PolicyError } from './policy-error.js';
import { type PolicySet } from './policy-set.js';

/**
 * Flotilla's scoping of a binding, written as annotations so that the Kubernetes objects stay
 * unchanged (a cluster's API server ignores them). Without any, a binding applies to every target.
 */
export const SCOPE_ANNOTATIONS = {
  /** Comma-separated project names: only targets of these projects. */
  projects: 'flotilla.dev/projects',
  /** Comma-separated ApplicationSet names: only their targets. */
  appsets: 'flotilla.dev/appsets',
  /** A label selector in kubectl's text form (`env=prod,tier in (web,api)`): only clusters it selects. */
  clusterSelector: 'flotilla.dev/cluster-selector',
  /** `allow` on a policy or its binding: an active break-glass lets its Deny through (audited). */
  breakGlass: 'flotilla.dev/break-glass',
} as const;

/** Where a target stands, as the scoping annotations read it. */
export interface TargetScope {
  project: string;
  appSet: string;
  clusterLabels: Record<string, string>;
}

/** One binding's scope, compiled. */
export interface BindingScope {
  projects: ReadonlySet<string> | null;
  appSets: ReadonlySet<string> | null;
  clusters: ((labels: Record<string, string>) => boolean) | null;
}

function annotationsOf(doc: unknown): Record<string, unknown> {
  const a = (doc as { metadata?: { annotations?: unknown } } | null)?.metadata?.annotations;
  return typeof a === 'object' && a !== null ? (a as Record<string, unknown>) : {};
}

function nameList(text: string): Set<string> {
  return new Set(
    text
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s !== ''),
  );
}

/**
 * Reads a binding's scoping annotations; each problem names its annotation's path
 * (`metadata.annotations.flotilla.dev/cluster-selector`) so `flotilla validate` can point at it.
 */
export function bindingScope(binding: unknown): { scope: BindingScope; errors: PolicyError[] } {
  const annotations = annotationsOf(binding);
  const name = (binding as { metadata?: { name?: unknown } } | null)?.metadata?.name;
  const errors: PolicyError[] = [];
  const fail = (key: string, message: string) =>
    errors.push({
      code: 'invalid-field',
      kind: 'ValidatingAdmissionPolicyBinding',
      name: typeof name === 'string' ? name : null,
      path: ['metadata', 'annotations', key],
      expression: null,
      message,
    });
  const scope: BindingScope = { projects: null, appSets: null, clusters: null };
  const list = (key: string): Set<string> | null => {
    const v = annotations[key];
    if (v === undefined) return null;
    const names = typeof v === 'string' ? nameList(v) : new Set<string>();
    if (names.size === 0) fail(key, 'expected a comma-separated list of names, got none');
    return names;
  };
  scope.projects = list(SCOPE_ANNOTATIONS.projects);
  scope.appSets = list(SCOPE_ANNOTATIONS.appsets);
  const selector = annotations[SCOPE_ANNOTATIONS.clusterSelector];
  if (selector !== undefined) {
    const path = `metadata.annotations.${SCOPE_ANNOTATIONS.clusterSelector}`;
    if (typeof selector !== 'string' || selector.trim() === '')
      fail(SCOPE_ANNOTATIONS.clusterSelector, 'expected a label selector such as env=prod, got none');
    else
      try {
        scope.clusters = compileSelector(parseSelectorText(selector, path), path);
      } catch (e) {
        if (!(e instanceof LabelSelectorError)) throw e;
        fail(SCOPE_ANNOTATIONS.clusterSelector, `invalid cluster selector: ${e.detail}`);
      }
  }
  const breakGlass = annotations[SCOPE_ANNOTATIONS.breakGlass];
  if (breakGlass !== undefined && breakGlass !== 'allow')
    fail(SCOPE_ANNOTATIONS.breakGlass, `only 'allow' is read, got ${JSON.stringify(breakGlass)}`);
  return { scope, errors };
}

const scopes = new WeakMap<object, BindingScope>();

/** A binding's scope, compiled once per binding object. */
function compiledScope(binding: object): BindingScope {
  let scope = scopes.get(binding);
  if (!scope) scopes.set(binding, (scope = bindingScope(binding).scope));
  return scope;
}

/** Whether a binding's scope holds the target. */
export function scopeHolds(scope: BindingScope, target: TargetScope): boolean {
  return (
    (scope.projects === null || scope.projects.has(target.project)) &&
    (scope.appSets === null || scope.appSets.has(target.appSet)) &&
    (scope.clusters === null || scope.clusters(target.clusterLabels))
  );
}

/** Whether a policy or binding lets an active break-glass through its Deny. */
export function allowsBreakGlass(doc: unknown): boolean {
  return annotationsOf(doc)[SCOPE_ANNOTATIONS.breakGlass] === 'allow';
}

/**
 * The part of a set that applies to one target: the bindings whose scope holds it (a binding whose
 * annotations do not read applies everywhere, since a fleet repository refuses it before it gets here).
 */
export function scopedPolicySet(set: PolicySet, target: TargetScope): PolicySet {
  const bindings = set.bindings.filter((b) => scopeHolds(compiledScope(b.source), target));
  return bindings.length === set.bindings.length ? set : { policies: set.policies, bindings };
}
