import { type ClustersGenerator } from '../application-set.js';
import { sanitizeName } from '../argo-functions.js';
import { compileSelector } from '../label-selector.js';
import { type Params } from '../types.js';
import { type GeneratorEnv } from './generator-env.js';
import { appendValues } from './values.js';

/**
 * One parameter set per inventory cluster whose labels match `selector`: `name`, `nameNormalized`,
 * `server`, `project`, and the labels and annotations (`metadata.labels.<k>` flat, or a nested
 * `metadata` with goTemplate, holding only the non-empty maps), plus templated `values`.
 * `flatList: true` yields a single set with every cluster under `clusters`.
 */
export function clustersGenerator(spec: ClustersGenerator, env: GeneratorEnv, path: string): Params[] {
  const matches = compileSelector(spec.selector, `${path}.selector`);
  const out: Params[] = [];
  for (const cluster of env.ctx.clusters) {
    const labels = cluster.labels ?? {};
    const annotations = cluster.annotations ?? {};
    if (!matches(labels)) continue;
    const params: Params = {
      name: cluster.name,
      nameNormalized: sanitizeName(cluster.name),
      server: cluster.server,
      project: cluster.project ?? '',
    };
    if (env.goTemplate) {
      const metadata: Record<string, unknown> = {};
      if (Object.keys(annotations).length > 0) metadata['annotations'] = { ...annotations };
      if (Object.keys(labels).length > 0) metadata['labels'] = { ...labels };
      params['metadata'] = metadata;
    } else {
      for (const [k, v] of Object.entries(annotations)) params[`metadata.annotations.${k}`] = v;
      for (const [k, v] of Object.entries(labels)) params[`metadata.labels.${k}`] = v;
    }
    appendValues(spec.values, params, env, `${path}.values`);
    out.push(params);
  }
  return spec.flatList ? [{ clusters: out }] : out;
}
