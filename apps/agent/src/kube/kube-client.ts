import { type HttpMethod, type KubeConfig, RequestContext } from '@kubernetes/client-node';
import { getGlobalDispatcher } from 'undici';
import {
  CLIENT_SIDE_APPLY_FIELD_MANAGER,
  FIELD_MANAGER,
  type ClusterCapabilities,
  type KubeObject,
} from '@flotilla/contract';
import { clientSideApplyPatch, withLastApplied } from '@flotilla/diff';
import { type ResourceId } from '../state/state-store.js';

export interface ResourceScope {
  /** Plural resource name used in URLs, e.g. `deployments`. */
  resource: string;
  namespaced: boolean;
}

/** What happens to an object's dependents when it is deleted (the API's DeleteOptions). */
export type PropagationPolicy = 'Foreground' | 'Background' | 'Orphan';

export interface WriteOptions {
  /** The server admits, defaults and merges as for a real write, and stores nothing. */
  dryRun?: boolean;
  /**
   * True (the default, as kubectl): a field the schema does not declare fails the write
   * (fieldValidation=Strict). False (Argo CD's Validate=false): the server drops it (Ignore).
   */
  validate?: boolean;
}

/** The query every write carries: who writes, whether it is a dry run, how unknown fields are met. */
function writeQuery(fieldManager: string, options: WriteOptions | undefined, extra = ''): string {
  const validation = options?.validate === false ? 'Ignore' : 'Strict';
  return `?fieldManager=${encodeURIComponent(fieldManager)}${extra}&fieldValidation=${validation}${options?.dryRun ? '&dryRun=All' : ''}`;
}

/** What the agent needs from a cluster; one implementation talks to the API server. */
export interface KubeClient {
  /**
   * The namespaces this client may reach (FLOTILLA_NAMESPACES: a Role in each, no ClusterRole);
   * absent for an agent with cluster-wide rights. Lists and watches then go namespace by namespace.
   */
  readonly namespaces?: readonly string[];
  /**
   * The same client, every request of it made as `user` (the Impersonate-User header): a
   * project's ServiceAccount, so that what a sync may write is what the project may (see
   * FLOTILLA_IMPERSONATE_NAMESPACE). Discovery answers are shared.
   */
  impersonating?(user: string): KubeClient;
  /** Discovery: the resource's URL name and whether it lives in a namespace. */
  scopeOf(apiVersion: string, kind: string): Promise<ResourceScope>;
  /**
   * Server-side apply as `flotilla` (or `fieldManager`), taking over conflicting fields (force).
   * Returns the live result.
   */
  apply(obj: KubeObject, options?: WriteOptions & { fieldManager?: string }): Promise<KubeObject>;
  /**
   * Writes the object whole as `flotilla` (PUT, kubectl replace), or creates it when it does not
   * exist: fields it does not carry are removed, whoever set them. Returns the live result.
   */
  replace(obj: KubeObject, options?: WriteOptions): Promise<KubeObject>;
  /**
   * Writes the object as `kubectl apply` (client-side) does, as `flotilla-client-side-apply`:
   * created (POST) with its last-applied-configuration annotation when `live` is undefined, else
   * patched with kubectl's three-way patch from `live` (strategic merge for built-in kinds, JSON
   * merge for custom resources), or not written at all when that patch is empty. Returns the live
   * result.
   */
  clientSideApply(obj: KubeObject, live: KubeObject | undefined, options?: WriteOptions): Promise<KubeObject>;
  get(id: ResourceId): Promise<KubeObject | undefined>;
  /**
   * A list of one namespace (`namespace`, for a namespaced kind) or else cluster-wide, with the
   * list's resourceVersion for a watch to start from.
   */
  list(
    apiVersion: string,
    kind: string,
    options?: { labelSelector?: string; namespace?: string },
  ): Promise<{ items: KubeObject[]; resourceVersion: string }>;
  /** Deletes (background propagation unless told otherwise); false when it was already gone. */
  delete(id: ResourceId, propagationPolicy?: PropagationPolicy): Promise<boolean>;
  /**
   * A plain create (POST to the collection), for objects the agent writes once, such as Events, and
   * hooks named by generateName (the server picks the name; apply would need one). With options,
   * written as `flotilla` and validated as apply is.
   */
  create(obj: KubeObject, options?: WriteOptions): Promise<KubeObject>;
  /** Discovery for Helm's `.Capabilities`: `/version`'s gitVersion and every served group/version. */
  capabilities(): Promise<ClusterCapabilities>;
}

/** A Kubernetes API failure with the server's own message (the Status object), ready for a report. */
export class KubeApiError extends Error {
  readonly code = 'kube-api-error';
  constructor(
    readonly status: number | undefined,
    readonly reason: string,
    message: string,
    readonly path: string,
  ) {
    super(message);
    this.name = 'KubeApiError';
  }
}

/** One entry of a discovery answer (`APIResourceList.resources`). */
interface ApiResource {
  name: string;
  namespaced: boolean;
  kind: string;
}

const JSON_ACCEPT = 'application/json, */*;q=0.8';

/**
 * The agent's Kubernetes client: plain REST over client-node's KubeConfig, which still does all of
 * the authentication (tokens, client certificates, exec plugins, in-cluster) and picks the
 * connection pool (see kube-connections.ts). client-node's KubernetesObjectApi is not used: it turns
 * every answer into typed model instances (Dates for timestamps) that the agent turned straight back
 * into JSON, and it needs client-node's generated serializer, which loads all ~750 model classes —
 * megabytes of code and heap in a daemon that only ever handles plain objects.
 */
export function createKubeClient(
  kc: KubeConfig,
  options: {
    namespaces?: readonly string[];
    impersonate?: string;
    discovery?: Map<string, ApiResource[]>;
  } = {},
): KubeClient {
  const discovery = options.discovery ?? new Map<string, ApiResource[]>();
  const impersonated = new Map<string, KubeClient>();
  const describe = (id: ResourceId): string =>
    `${id.apiVersion} ${id.kind} ${id.namespace ? `${id.namespace}/` : ''}${id.name}`;

  /** One API call; the answer's JSON, or undefined for a 404 when `notFound` is 'undefined'. */
  const call = async (
    method: string,
    path: string,
    what: string,
    init: { body?: string; contentType?: string; notFound?: 'undefined' } = {},
  ): Promise<unknown> => {
    const cluster = kc.getCurrentCluster();
    if (!cluster)
      throw new KubeApiError(undefined, 'NoCluster', 'the kubeconfig has no current cluster', what);
    const ctx = new RequestContext(`${cluster.server}${path}`, method as HttpMethod);
    ctx.setHeaderParam('Accept', JSON_ACCEPT);
    if (init.contentType) ctx.setHeaderParam('Content-Type', init.contentType);
    if (options.impersonate) ctx.setHeaderParam('Impersonate-User', options.impersonate);
    let status: number;
    let text: string;
    try {
      await kc.applySecurityAuthentication(ctx);
      // undici's request() rather than fetch(): the same pooled connections, without the WHATWG
      // streams, Headers and AbortSignal fetch builds per call, which cost the agent more CPU per
      // apply than the API server spent on it (issue #23's fleet profile). Never redirected, never
      // asked to compress: an API server does neither unasked.
      const dispatcher = ctx.getDispatcher() ?? getGlobalDispatcher();
      const response = await dispatcher.request({
        ...originAndPath(ctx.getUrl()),
        method,
        headers: ctx.getHeaders(),
        body: init.body ?? null,
      });
      status = response.statusCode;
      text = await response.body.text();
    } catch (err) {
      const e = err as Error & { code?: string; cause?: { code?: string } };
      const code = e.cause?.code ?? e.code;
      throw new KubeApiError(
        undefined,
        'Unreachable',
        `${e.message}${code && !e.message.includes(code) ? ` (${code})` : ''}`,
        what,
      );
    }
    if (status >= 200 && status < 300) return text ? (JSON.parse(text) as unknown) : undefined;
    if (status === 404 && init.notFound === 'undefined') return undefined;
    throw statusError(status, text, what);
  };

  const lookup = async (apiVersion: string, kind: string): Promise<ApiResource | undefined> => {
    const known = discovery.get(apiVersion)?.find((r) => r.kind === kind);
    if (known) return known;
    // Not cached, or cached without this kind (a CRD installed since): ask again.
    const list = (await call('GET', groupVersionPath(apiVersion), `${apiVersion} ${kind}`)) as {
      resources?: ApiResource[];
    };
    // Subresources (`deployments/scale`) share their parent's kind: keep the resources themselves.
    const resources = (list.resources ?? []).filter((r) => !r.name.includes('/'));
    discovery.set(apiVersion, resources);
    return resources.find((r) => r.kind === kind);
  };

  const scopeOf = async (apiVersion: string, kind: string): Promise<ResourceScope> => {
    let found;
    try {
      found = await lookup(apiVersion, kind);
    } catch (err) {
      const e = err as KubeApiError;
      throw new KubeApiError(
        e.status,
        e.reason,
        e.status === 404
          ? `the cluster does not serve ${apiVersion} (looking up kind ${kind}): ${e.message}`
          : `discovery of ${apiVersion} failed (looking up kind ${kind}): ${e.message}`,
        e.path,
      );
    }
    if (!found) {
      throw new KubeApiError(
        404,
        'NotFound',
        `the cluster does not serve kind ${kind} in ${apiVersion} (is its CRD installed?)`,
        `${apiVersion} ${kind}`,
      );
    }
    return { resource: found.name, namespaced: found.namespaced };
  };

  /** The object's URL (`name` omitted: its collection); a namespaced object without one goes to `default`. */
  const pathOf = async (id: Omit<ResourceId, 'name'> & { name?: string }): Promise<string> => {
    const scope = await scopeOf(id.apiVersion, id.kind);
    let path = groupVersionPath(id.apiVersion);
    if (scope.namespaced) path += `/namespaces/${encodeURIComponent(id.namespace ?? 'default')}`;
    path += `/${scope.resource}`;
    return id.name === undefined ? path : `${path}/${encodeURIComponent(id.name)}`;
  };

  return {
    ...(options.namespaces && { namespaces: options.namespaces }),
    impersonating(user) {
      let client = impersonated.get(user);
      if (!client) {
        const { namespaces } = options;
        client = createKubeClient(kc, { ...(namespaces && { namespaces }), impersonate: user, discovery });
        impersonated.set(user, client);
      }
      return client;
    },
    scopeOf: scopeOf,

    async apply(obj, options) {
      const id = idOf(obj);
      const query = writeQuery(options?.fieldManager ?? FIELD_MANAGER, options, '&force=true');
      // Server-side apply takes JSON as well as YAML (JSON is YAML).
      return (await call('PATCH', `${await pathOf(id)}${query}`, describe(id), {
        body: JSON.stringify(obj),
        contentType: 'application/apply-patch+yaml',
      })) as KubeObject;
    },

    async replace(obj, options) {
      const id = idOf(obj);
      const query = writeQuery(FIELD_MANAGER, options);
      const init = { body: JSON.stringify(obj), contentType: 'application/json' };
      try {
        return (await call('PUT', `${await pathOf(id)}${query}`, describe(id), init)) as KubeObject;
      } catch (err) {
        // kubectl replace fails for a missing object; Argo CD's Replace=true creates it instead.
        if (!(err instanceof KubeApiError && err.status === 404 && err.reason === 'NotFound')) throw err;
        const { name: _name, ...collection } = id;
        return (await call('POST', `${await pathOf(collection)}${query}`, describe(id), init)) as KubeObject;
      }
    },

    async clientSideApply(obj, live, options) {
      const id = idOf(obj);
      const query = writeQuery(CLIENT_SIDE_APPLY_FIELD_MANAGER, options);
      if (!live) {
        const { name: _name, ...collection } = id;
        return (await call('POST', `${await pathOf(collection)}${query}`, describe(id), {
          body: JSON.stringify(withLastApplied(obj)),
          contentType: 'application/json',
        })) as KubeObject;
      }
      const { type, patch } = clientSideApplyPatch(obj, live);
      // kubectl sends nothing for an empty patch ("unchanged"), so neither does Flotilla.
      if (Object.keys(patch).length === 0) return live;
      return (await call('PATCH', `${await pathOf(id)}${query}`, describe(id), {
        body: JSON.stringify(patch),
        contentType:
          type === 'strategic' ? 'application/strategic-merge-patch+json' : 'application/merge-patch+json',
      })) as KubeObject;
    },

    async get(id) {
      return (await call('GET', await pathOf(id), describe(id), { notFound: 'undefined' })) as
        KubeObject | undefined;
    },

    async list(apiVersion, kind, options = {}) {
      const path = await pathOf({ apiVersion, kind, namespace: options.namespace });
      const query = options.labelSelector
        ? `?labelSelector=${encodeURIComponent(options.labelSelector)}`
        : '';
      const url = options.namespace === undefined ? clusterWide(path) : path;
      const list = (await call('GET', `${url}${query}`, `${apiVersion} ${kind}`)) as {
        items?: KubeObject[];
        metadata?: { resourceVersion?: string };
      };
      return {
        // A list's items carry no apiVersion/kind of their own.
        items: (list.items ?? []).map((i) => ({ ...i, apiVersion, kind })),
        resourceVersion: list.metadata?.resourceVersion ?? '',
      };
    },

    async create(obj, options) {
      const { name: _name, ...collection } = idOf(obj);
      const query = options ? writeQuery(FIELD_MANAGER, options) : '';
      return (await call('POST', `${await pathOf(collection)}${query}`, describe(idOf(obj)), {
        body: JSON.stringify(obj),
        contentType: 'application/json',
      })) as KubeObject;
    },

    async capabilities() {
      const version = (await call('GET', '/version', 'discovery /version')) as { gitVersion?: string };
      const core = (await call('GET', '/api', 'discovery /api')) as { versions?: string[] };
      const groups = (await call('GET', '/apis', 'discovery /apis')) as {
        groups?: { versions?: { groupVersion?: string }[] }[];
      };
      const served = [
        ...(core.versions ?? []),
        ...(groups.groups ?? []).flatMap((g) => (g.versions ?? []).map((v) => v.groupVersion ?? '')),
      ];
      return {
        kubeVersion: version.gitVersion ?? '',
        apiVersions: [...new Set(served.filter((v) => v !== ''))].sort(),
      };
    },

    async delete(id, propagationPolicy = 'Background') {
      try {
        await call('DELETE', `${await pathOf(id)}?propagationPolicy=${propagationPolicy}`, describe(id));
        return true;
      } catch (err) {
        if (err instanceof KubeApiError && err.status === 404) return false;
        throw err;
      }
    },
  };
}

/** A URL as undici's dispatcher takes it: the origin, and the path with its query. */
function originAndPath(url: string): { origin: string; path: string } {
  const u = new URL(url);
  return { origin: u.origin, path: `${u.pathname}${u.search}` };
}

/** `/api/v1` for the core group, `/apis/<group>/<version>` for the others. */
export function groupVersionPath(apiVersion: string): string {
  return apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
}

/** `/api/v1/namespaces/default/configmaps` → `/api/v1/configmaps`: every namespace at once. */
function clusterWide(path: string): string {
  return path.replace(/\/namespaces\/[^/]+\/([^/]+)$/, '/$1');
}

/** A Kubernetes API failure from its Status answer (or the raw text of an odd server). */
function statusError(status: number, body: string, path: string): KubeApiError {
  let reason = 'Unknown';
  let message = body ? body.slice(0, 500) : `HTTP ${status}`;
  try {
    const parsed = JSON.parse(body) as { reason?: string; message?: string };
    if (parsed.message) message = parsed.message;
    if (parsed.reason) reason = parsed.reason;
  } catch {
    // keep the raw text
  }
  return new KubeApiError(status, reason, message, path);
}

export function idOf(obj: KubeObject): ResourceId {
  const id: ResourceId = { apiVersion: obj.apiVersion, kind: obj.kind, name: obj.metadata.name };
  if (obj.metadata.namespace) id.namespace = obj.metadata.namespace;
  return id;
}
