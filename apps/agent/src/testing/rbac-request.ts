/**
 * What the Kubernetes authorizer sees in a request (its RequestInfo): a resource request's verb,
 * API group, resource and namespace, or a non-resource path (discovery, /version, /openapi), which
 * every authenticated user may read (system:discovery). For tests that hold an agent's requests,
 * as kube-sim recorded them, against the RBAC rules it is installed with.
 */
export interface ResourceAttributes {
  verb: string;
  apiGroup: string;
  resource: string;
  namespace?: string;
  name?: string;
}
export type RequestAttributes = { nonResource: string } | ResourceAttributes;

export interface PolicyRule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
}

export function requestAttributes(method: string, path: string, query: string): RequestAttributes {
  const segments = path.split('/').filter(Boolean);
  let apiGroup: string;
  let rest: string[];
  if (segments[0] === 'api' && segments.length >= 2) {
    apiGroup = '';
    rest = segments.slice(2);
  } else if (segments[0] === 'apis' && segments.length >= 3) {
    apiGroup = segments[1]!;
    rest = segments.slice(3);
  } else return { nonResource: path };
  if (rest.length === 0) return { nonResource: path };
  let namespace: string | undefined;
  // `/api/v1/namespaces/NAME` is the Namespace itself; `/namespaces/NAME/RESOURCE…` is inside it.
  if (rest[0] === 'namespaces' && rest.length >= 3) {
    namespace = rest[1];
    rest = rest.slice(2);
  }
  const [resource = '', name, subresource] = rest;
  const watch = /[?&]watch=(true|1)(&|$)/.test(query);
  const verb =
    method === 'GET'
      ? name !== undefined
        ? 'get'
        : watch
          ? 'watch'
          : 'list'
      : method === 'POST'
        ? 'create'
        : method === 'PUT'
          ? 'update'
          : method === 'PATCH'
            ? 'patch'
            : method === 'DELETE'
              ? name !== undefined
                ? 'delete'
                : 'deletecollection'
              : method.toLowerCase();
  return {
    verb,
    apiGroup,
    resource: subresource ? `${resource}/${subresource}` : resource,
    ...(namespace !== undefined && { namespace }),
    ...(name !== undefined && { name }),
  };
}

/** Whether one of the rules grants the request (the RBAC authorizer's rule match, without names). */
export function allowedBy(rules: readonly PolicyRule[], a: RequestAttributes): boolean {
  if ('nonResource' in a) return true;
  const has = (list: string[], value: string) => list.includes('*') || list.includes(value);
  return rules.some(
    (r) => has(r.verbs, a.verb) && has(r.apiGroups, a.apiGroup) && has(r.resources, a.resource),
  );
}
