import { ApiException, type KubeConfig, KubernetesObjectApi, PatchStrategy } from '@kubernetes/client-node';
import { FIELD_MANAGER, type KubeObject } from '@flotilla/contract';
import { type ResourceId } from '../state/state-store.js';

export interface ResourceScope {
  /** Plural resource name used in URLs, e.g. `deployments`. */
  resource: string;
  namespaced: boolean;
}

/** What the agent needs from a cluster; one implementation talks to the API server. */
export interface KubeClient {
  /** Discovery: the resource's URL name and whether it lives in a namespace. */
  scopeOf(apiVersion: string, kind: string): Promise<ResourceScope>;
  /** Server-side apply as `flotilla`, taking over conflicting fields (force). Returns the live result. */
  apply(obj: KubeObject): Promise<KubeObject>;
  get(id: ResourceId): Promise<KubeObject | undefined>;
  /** Cluster-wide list, with the list's resourceVersion for a watch to start from. */
  list(apiVersion: string, kind: string): Promise<{ items: KubeObject[]; resourceVersion: string }>;
  /** Deletes with background propagation; false when it was already gone. */
  delete(id: ResourceId): Promise<boolean>;
}

/** A Kubernetes API failure with the server's own message (the Status object), ready for a report. */
export class KubeApiError extends Error {
  readonly code = 'KUBE_API_ERROR';
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

/** Exposes the discovery lookup that KubernetesObjectApi keeps to itself (and caches per apiVersion). */
class DiscoveringObjectApi extends KubernetesObjectApi {
  lookup(apiVersion: string, kind: string): ReturnType<KubernetesObjectApi['resource']> {
    return this.resource(apiVersion, kind);
  }
}

export function createKubeClient(kc: KubeConfig): KubeClient {
  const api = kc.makeApiClient(DiscoveringObjectApi);
  const describe = (id: ResourceId): string =>
    `${id.apiVersion} ${id.kind} ${id.namespace ? `${id.namespace}/` : ''}${id.name}`;

  return {
    async scopeOf(apiVersion, kind) {
      let found;
      try {
        found = await api.lookup(apiVersion, kind);
      } catch (err) {
        const e = toKubeError(err, `${apiVersion} ${kind}`);
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
    },

    async apply(obj) {
      try {
        const result = await api.patch(
          obj,
          undefined,
          undefined,
          FIELD_MANAGER,
          true,
          PatchStrategy.ServerSideApply,
        );
        return toPlain(result);
      } catch (err) {
        throw toKubeError(err, describe(idOf(obj)));
      }
    },

    async get(id) {
      try {
        return toPlain(await api.read({ apiVersion: id.apiVersion, kind: id.kind, metadata: metaOf(id) }));
      } catch (err) {
        if (err instanceof ApiException && err.code === 404) return undefined;
        throw toKubeError(err, describe(id));
      }
    },

    async list(apiVersion, kind) {
      try {
        const list = await api.list(apiVersion, kind);
        return {
          items: list.items.map((i) => toPlain({ ...i, apiVersion, kind })),
          resourceVersion: list.metadata?.resourceVersion ?? '',
        };
      } catch (err) {
        throw toKubeError(err, `${apiVersion} ${kind}`);
      }
    },

    async delete(id) {
      try {
        await api.delete(
          { apiVersion: id.apiVersion, kind: id.kind, metadata: metaOf(id) },
          undefined,
          undefined,
          undefined,
          undefined,
          'Background',
        );
        return true;
      } catch (err) {
        if (err instanceof ApiException && err.code === 404) return false;
        throw toKubeError(err, describe(id));
      }
    },
  };
}

export function idOf(obj: KubeObject): ResourceId {
  const id: ResourceId = { apiVersion: obj.apiVersion, kind: obj.kind, name: obj.metadata.name };
  if (obj.metadata.namespace) id.namespace = obj.metadata.namespace;
  return id;
}

function metaOf(id: ResourceId): { name: string; namespace?: string } {
  return id.namespace ? { name: id.name, namespace: id.namespace } : { name: id.name };
}

/**
 * client-node returns typed model instances for built-in kinds (Dates for timestamps); the rest of
 * the agent works on plain JSON, the same shape a watch event carries.
 */
function toPlain(obj: unknown): KubeObject {
  return JSON.parse(JSON.stringify(obj)) as KubeObject;
}

function toKubeError(err: unknown, path: string): KubeApiError {
  if (err instanceof KubeApiError) return err;
  if (err instanceof ApiException) {
    const status = (err as ApiException<unknown>).code;
    const body = (err as ApiException<unknown>).body;
    let reason = 'Unknown';
    let message = typeof body === 'string' && body ? body.slice(0, 500) : `HTTP ${status}`;
    try {
      const parsed = (typeof body === 'string' ? JSON.parse(body) : body) as {
        reason?: string;
        message?: string;
      };
      if (parsed.message) message = parsed.message;
      if (parsed.reason) reason = parsed.reason;
    } catch {
      // keep the raw text
    }
    return new KubeApiError(status, reason, message, path);
  }
  const e = err as Error & { cause?: { code?: string } };
  return new KubeApiError(
    undefined,
    'Unreachable',
    `${e.message}${e.cause?.code ? ` (${e.cause.code})` : ''}`,
    path,
  );
}
