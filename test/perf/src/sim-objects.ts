/** Minimal REST paths for the few kinds the benchmarks write with plain `fetch`. */
const PLURALS: Record<string, { group: string; plural: string; namespaced: boolean }> = {
  Namespace: { group: 'api/v1', plural: 'namespaces', namespaced: false },
  ConfigMap: { group: 'api/v1', plural: 'configmaps', namespaced: true },
  Service: { group: 'api/v1', plural: 'services', namespaced: true },
  Deployment: { group: 'apis/apps/v1', plural: 'deployments', namespaced: true },
};

export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  [key: string]: unknown;
}

export function objectPath(obj: Pick<KubeObject, 'kind' | 'metadata'>): string {
  const p = PLURALS[obj.kind];
  if (!p) throw new Error(`no REST path known for kind ${obj.kind}`);
  const ns = p.namespaced ? `/namespaces/${obj.metadata.namespace ?? 'default'}` : '';
  return `/${p.group}${ns}/${p.plural}/${obj.metadata.name}`;
}

/**
 * Server-side apply of one object over HTTP, as kubectl apply --server-side does. A connection that
 * fails (not an HTTP error) is tried twice more (an apply is idempotent), then reported with its cause.
 */
export async function applyOverHttp(baseUrl: string, obj: KubeObject, manager = 'bench'): Promise<void> {
  const url = `${baseUrl}${objectPath(obj)}?fieldManager=${manager}&force=true`;
  const send = (): Promise<Response> =>
    fetch(url, {
      method: 'PATCH',
      headers: { 'content-type': 'application/apply-patch+yaml' },
      body: JSON.stringify(obj),
    });
  let res: Response | undefined;
  for (let attempt = 1; !res; attempt++) {
    try {
      res = await send();
    } catch (err) {
      if (attempt >= 3) {
        const cause = (err as { cause?: unknown }).cause;
        throw new Error(`apply ${obj.kind} ${obj.metadata.name} to ${baseUrl}: ${String(cause ?? err)}`, {
          cause: err,
        });
      }
      await new Promise((resolve) => setTimeout(resolve, 200 * attempt));
    }
  }
  if (!res.ok)
    throw new Error(`apply ${obj.kind} ${obj.metadata.name}: HTTP ${res.status} ${await res.text()}`);
  await res.arrayBuffer().catch(() => undefined);
}

export function deployment(name: string, namespace: string, image: string, replicas = 1): KubeObject {
  const labels = { 'app.kubernetes.io/name': name };
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace, labels },
    spec: {
      replicas,
      selector: { matchLabels: labels },
      template: {
        metadata: { labels },
        spec: {
          containers: [
            {
              name,
              image,
              ports: [{ containerPort: 8080, name: 'http' }],
              env: [
                { name: 'LOG_LEVEL', value: 'info' },
                { name: 'APP_NAME', value: name },
              ],
              resources: { requests: { cpu: '100m', memory: '64Mi' }, limits: { memory: '128Mi' } },
              readinessProbe: { httpGet: { path: '/healthz', port: 'http' }, periodSeconds: 5 },
            },
          ],
        },
      },
    },
  };
}

export function service(name: string, namespace: string): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name, namespace, labels: { 'app.kubernetes.io/name': name } },
    spec: {
      selector: { 'app.kubernetes.io/name': name },
      ports: [{ name: 'http', port: 80, targetPort: 'http' }],
    },
  };
}

export function configMap(name: string, namespace: string, data: Record<string, string>): KubeObject {
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace }, data };
}

export function namespace(name: string): KubeObject {
  return { apiVersion: 'v1', kind: 'Namespace', metadata: { name } };
}
