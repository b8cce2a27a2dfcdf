import { compileSelector, type LooseLabelSelector } from '@flotilla/labels';
import { type MatchResources, type ResourceRule } from './policy-schema.js';
import { type ResourceInfo } from './resource-index.js';

export type Operation = 'CREATE' | 'UPDATE';

/** What matching looks at: the request's resource, operation, name and the labels it can see. */
export interface MatchRequest {
  resource: ResourceInfo;
  operation: Operation;
  name: string;
  objectLabels: Record<string, string>;
  oldObjectLabels: Record<string, string> | null;
  /** The labels of the object's namespace (of the object itself for a Namespace); null when unknown. */
  namespaceLabels: Record<string, string> | null;
}

export type Matcher = (request: MatchRequest) => boolean;

function selectorMatcher(
  selector: LooseLabelSelector | undefined,
  path: string,
): (l: Record<string, string>) => boolean {
  return compileSelector(selector ?? null, path);
}

function ruleMatches(rule: ResourceRule, r: MatchRequest): boolean {
  const has = (list: readonly string[] | undefined, value: string): boolean =>
    (list ?? []).some((x) => x === '*' || x === value);
  if (!has(rule.operations, r.operation)) return false;
  if (!has(rule.apiGroups, r.resource.group)) return false;
  if (!has(rule.apiVersions, r.resource.version)) return false;
  // `*` and `*/*` take every resource; `pods/status`-style entries name subresources, which a
  // manifest never is.
  if (!(rule.resources ?? []).some((x) => x === '*' || x === '*/*' || x === r.resource.resource))
    return false;
  const scope = rule.scope ?? '*';
  if (scope === 'Cluster' && r.resource.namespaced) return false;
  if (scope === 'Namespaced' && !r.resource.namespaced) return false;
  const names = rule.resourceNames ?? [];
  return names.length === 0 || names.includes(r.name);
}

/**
 * Kubernetes' MatchResources (admission/plugin/policy/matching): the object and namespace selectors,
 * any resource rule, and no exclude rule. `matchPolicy: Equivalent` (the default) also matches the
 * same group and resource at another version: offline no conversion is possible, so the object is
 * evaluated as written.
 */
export function compileMatch(
  match: MatchResources | undefined,
  path: string,
  requireRules: boolean,
): Matcher {
  if (match === undefined) return () => true;
  const objectSelector = selectorMatcher(match.objectSelector, `${path}.objectSelector`);
  const namespaceSelector = selectorMatcher(match.namespaceSelector, `${path}.namespaceSelector`);
  const equivalent = (match.matchPolicy ?? 'Equivalent') === 'Equivalent';
  const widen = (rules: readonly ResourceRule[] | undefined): ResourceRule[] =>
    (rules ?? []).map((rule) => (equivalent ? { ...rule, apiVersions: ['*'] } : rule));
  const include = widen(match.resourceRules);
  const exclude = widen(match.excludeResourceRules);
  return (r) => {
    const labelled =
      objectSelector(r.objectLabels) || (r.oldObjectLabels !== null && objectSelector(r.oldObjectLabels));
    if (!labelled) return false;
    // Cluster-scoped objects other than Namespaces have no namespace to select on.
    const namespaceScoped =
      r.resource.namespaced || (r.resource.group === '' && r.resource.kind === 'Namespace');
    if (namespaceScoped && !namespaceSelector(r.namespaceLabels ?? {})) return false;
    if ((requireRules || include.length > 0) && !include.some((rule) => ruleMatches(rule, r))) return false;
    return !exclude.some((rule) => ruleMatches(rule, r));
  };
}
