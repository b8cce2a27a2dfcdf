import { type ClustersGenerator } from '../application-set.js';
import { sanitizeName } from '../argo-functions.js';
import { isEmptySelector } from '@flotilla/labels';
import { selectorMatcher } from '../selector-matcher.js';
import { type Params } from '../types.js';
import { type GeneratorEnv } from './generator-env.js';
import { appendValues } from './values.js';

export const IN_CLUSTER_SERVER = 'https://kubernetes.default.svc';

/**
 * A cluster given without labels or annotations at the in-cluster address stands for Argo CD's local
 * cluster (the one without a Secret): it gets Argo CD's local-cluster params.
 */
function isLocalCluster(
  server: string,
  labels: Record<string, string>,
  annotations: Record<string, string>,
): boolean {
  return (
    server.replace(/\/+$/, '') === IN_CLUSTER_SERVER &&
    Object.keys(labels).length === 0 &&
    Object.keys(annotations).length === 0
  );
}

/**
 * One parameter set per inventory cluster whose labels match `selector`: `name`, `nameNormalized`,
 * `server`, `project`, and the labels and annotations (`metadata.labels.<k>` flat, or a nested
 * `metadata` with goTemplate, holding only the non-empty maps), plus templated `values`.
 * `flatList: true` yields a single set with every cluster under `clusters`.
 */
export function clustersGenerator(spec: ClustersGenerator, env: GeneratorEnv, path: string): Params[] {
  const matches = selectorMatcher(spec.selector, `${path}.selector`);
  const hasSelector = !isEmptySelector(spec.selector);
  const out: Params[] = [];
  for (const cluster of env.ctx.clusters) {
    const labels = cluster.labels ?? {};
    const annotations = cluster.annotations ?? {};
    const local = isLocalCluster(cluster.server, labels, annotations);
    // Argo CD's local cluster has no Secret, hence no labels: any selector leaves it out.
    if (local ? hasSelector : !matches(labels)) continue;
    const params: Params = {
      name: cluster.name,
      nameNormalized: local ? cluster.name : sanitizeName(cluster.name),
      server: cluster.server,
      project: cluster.project ?? '',
    };
    // The local cluster gets no metadata at all, as Argo CD yields it.
    if (!local && env.goTemplate) {
      const metadata: Record<string, unknown> = {};
      if (Object.keys(annotations).length > 0) metadata['annotations'] = { ...annotations };
      if (Object.keys(labels).length > 0) metadata['labels'] = { ...labels };
      params['metadata'] = metadata;
    } else if (!local) {
      for (const [k, v] of Object.entries(annotations)) params[`metadata.annotations.${k}`] = v;
      for (const [k, v] of Object.entries(labels)) params[`metadata.labels.${k}`] = v;
    }
    appendValues(spec.values, params, env, `${path}.values`);
    out.push(params);
  }
  return spec.flatList ? [{ clusters: out }] : out;
}
