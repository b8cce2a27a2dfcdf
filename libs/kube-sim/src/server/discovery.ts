import { apiVersionOf, type ResourceType } from '../resources/resource-type.js';
import { type ResourceRegistry } from '../resources/resource-registry.js';

/** Discovery documents (§1.2, §1.3): legacy per-group-version lists and aggregated v2. */
export const VERSION_INFO = {
  major: '1',
  minor: '32',
  gitVersion: 'v1.32.0',
  gitCommit: '70d3cc986aa8221cd1dfb1121852688902d3bf53',
  gitTreeState: 'clean',
  buildDate: '2024-12-11T00:00:00Z',
  goVersion: 'go1.23.3',
  compiler: 'gc',
  platform: 'linux/amd64',
};

/**
 * `/version` for a cluster serving Kubernetes `gitVersion` (`v1.30.4`): what agents report as their
 * cluster's version, so charts can be rendered against different clusters. Throws on anything else.
 */
export function versionInfo(gitVersion: string): typeof VERSION_INFO {
  const m = /^v(\d+)\.(\d+)\.(\d+)$/.exec(gitVersion);
  if (!m) throw new Error(`kubernetesVersion must look like v1.30.4, not "${gitVersion}"`);
  return { ...VERSION_INFO, major: m[1] ?? '1', minor: m[2] ?? '0', gitVersion };
}

const VERBS = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];
const SUB_VERBS = ['get', 'patch', 'update'];

export const AGGREGATED_CONTENT_TYPE = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList';

/** True when the client accepts aggregated discovery v2 (kubectl does, client-node does not). */
export function wantsAggregated(accept: string | undefined): boolean {
  if (!accept) return false;
  return accept.split(',').some((part) => {
    const params = part.split(';').map((p) => p.trim());
    return (
      params.includes('g=apidiscovery.k8s.io') &&
      params.includes('v=v2') &&
      params.includes('as=APIGroupDiscoveryList')
    );
  });
}

export function apiVersions(hostPort: string): object {
  return {
    kind: 'APIVersions',
    versions: ['v1'],
    serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress: hostPort }],
  };
}

function groupEntry(group: string, versions: string[]): object {
  const gvs = versions.map((v) => ({ groupVersion: `${group}/${v}`, version: v }));
  return { name: group, versions: gvs, preferredVersion: gvs[0] };
}

export function apiGroupList(registry: ResourceRegistry): object {
  const groups = new Map<string, string[]>();
  for (const gv of registry.groupVersions()) {
    if (!gv.group) continue;
    const list = groups.get(gv.group) ?? [];
    if (!list.includes(gv.version)) list.push(gv.version);
    groups.set(gv.group, list);
  }
  return {
    kind: 'APIGroupList',
    apiVersion: 'v1',
    groups: [...groups].map(([g, vs]) => groupEntry(g, vs)),
  };
}

export function apiGroup(registry: ResourceRegistry, group: string): object | undefined {
  const versions = registry
    .groupVersions()
    .filter((gv) => gv.group === group)
    .map((gv) => gv.version);
  if (!versions.length) return undefined;
  return { kind: 'APIGroup', apiVersion: 'v1', ...groupEntry(group, versions) };
}

/** Main resource first, then its subresources: client-node takes the first entry whose kind matches. */
export function apiResourceList(
  registry: ResourceRegistry,
  group: string,
  version: string,
): object | undefined {
  const gv = registry.groupVersions().find((x) => x.group === group && x.version === version);
  if (!gv) return undefined;
  const resources: object[] = [];
  for (const rt of gv.resources) {
    const entry: Record<string, unknown> = {
      name: rt.plural,
      singularName: rt.singular,
      namespaced: rt.namespaced,
      kind: rt.kind,
      verbs: rt.review ? ['create'] : VERBS,
    };
    if (rt.shortNames.length) entry['shortNames'] = rt.shortNames;
    if (rt.categories.length) entry['categories'] = rt.categories;
    entry['storageVersionHash'] = Buffer.from(`${rt.group}/${rt.version}/${rt.kind}`)
      .toString('base64')
      .slice(0, 11);
    resources.push(entry);
    if (rt.hasScale)
      resources.push({
        name: `${rt.plural}/scale`,
        singularName: '',
        namespaced: rt.namespaced,
        group: 'autoscaling',
        version: 'v1',
        kind: 'Scale',
        verbs: SUB_VERBS,
      });
    if (rt.hasStatus)
      resources.push({
        name: `${rt.plural}/status`,
        singularName: '',
        namespaced: rt.namespaced,
        kind: rt.kind,
        verbs: SUB_VERBS,
      });
  }
  return { kind: 'APIResourceList', apiVersion: 'v1', groupVersion: apiVersionOf(gv), resources };
}

function aggregatedResource(rt: ResourceType): object {
  const subresources: object[] = [];
  if (rt.hasScale)
    subresources.push({
      subresource: 'scale',
      responseKind: { group: 'autoscaling', version: 'v1', kind: 'Scale' },
      verbs: SUB_VERBS,
    });
  if (rt.hasStatus)
    subresources.push({
      subresource: 'status',
      responseKind: { group: rt.group, version: rt.version, kind: rt.kind },
      verbs: SUB_VERBS,
    });
  const r: Record<string, unknown> = {
    resource: rt.plural,
    responseKind: { group: rt.group, version: rt.version, kind: rt.kind },
    scope: rt.namespaced ? 'Namespaced' : 'Cluster',
    singularResource: rt.singular,
    verbs: rt.review ? ['create'] : VERBS,
  };
  if (rt.shortNames.length) r['shortNames'] = rt.shortNames;
  if (rt.categories.length) r['categories'] = rt.categories;
  if (subresources.length) r['subresources'] = subresources;
  return r;
}

/** `/api` (core only) or `/apis` (every named group) as an APIGroupDiscoveryList. */
export function aggregatedDiscovery(registry: ResourceRegistry, core: boolean): object {
  const groups = new Map<string, { version: string; resources: ResourceType[] }[]>();
  for (const gv of registry.groupVersions()) {
    if (core !== (gv.group === '')) continue;
    const list = groups.get(gv.group) ?? [];
    list.push({ version: gv.version, resources: gv.resources });
    groups.set(gv.group, list);
  }
  return {
    kind: 'APIGroupDiscoveryList',
    apiVersion: 'apidiscovery.k8s.io/v2',
    metadata: {},
    items: [...groups].map(([name, versions]) => ({
      metadata: { name },
      versions: versions.map((v) => ({
        version: v.version,
        freshness: 'Current',
        resources: v.resources.map(aggregatedResource),
      })),
    })),
  };
}
