import { GeneratorError } from '../generator-error.js';
import { renderString } from '../render-string.js';
import { type Params } from '../types.js';
import { type GeneratorEnv } from './generator-env.js';

/**
 * Argo CD's appendTemplatedValues: each `values` entry is templated with the generator's own params
 * (not with the other values) and added as `values.<key>` (default templating) or under `values`.
 */
export function appendValues(
  values: Record<string, string> | null | undefined,
  params: Params,
  env: GeneratorEnv,
  path: string,
): void {
  if (!values) return;
  const rendered: Record<string, string> = {};
  for (const key of Object.keys(values).sort()) {
    try {
      rendered[key] = renderString(values[key] ?? '', params, env);
    } catch (err) {
      throw GeneratorError.wrap(err, 'template-execute', `${path}.${key}`);
    }
  }
  if (env.goTemplate) {
    if (Object.keys(rendered).length > 0) params['values'] = rendered;
  } else {
    for (const [k, v] of Object.entries(rendered)) params[`values.${k}`] = v;
  }
}
