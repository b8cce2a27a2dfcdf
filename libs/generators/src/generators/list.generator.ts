import { type ListGenerator } from '../application-set.js';
import { GeneratorError } from '../generator-error.js';
import { isPlainObject } from '../params.js';
import { type Params } from '../types.js';
import { parseYamlData } from '../yaml-data.js';
import { type GeneratorEnv } from './generator-env.js';

/**
 * One parameter set per element. With the default templating every value must be a string, except
 * `values`, a string map that becomes `values.<key>`; with goTemplate elements are kept as they are.
 * `elementsYaml` (a YAML/JSON list, usually templated from a matrix sibling) adds its elements as is.
 */
export function listGenerator(spec: ListGenerator, env: GeneratorEnv, path: string): Params[] {
  const out: Params[] = [];
  (spec.elements ?? []).forEach((element, i) => {
    const at = `${path}.elements[${i}]`;
    if (!isPlainObject(element))
      throw new GeneratorError('invalid-params', 'an element must be an object', at);
    out.push(env.goTemplate ? structuredClone(element) : stringParams(element, at));
  });
  if (spec.elementsYaml) {
    const at = `${path}.elementsYaml`;
    let parsed: unknown;
    try {
      parsed = parseYamlData(spec.elementsYaml);
    } catch (err) {
      throw new GeneratorError('invalid-params', `not a YAML list: ${(err as Error).message}`, at);
    }
    if (parsed != null) {
      if (!Array.isArray(parsed) || !parsed.every(isPlainObject)) {
        throw new GeneratorError('invalid-params', 'must be a YAML/JSON list of objects', at);
      }
      out.push(...parsed);
    }
  }
  return out;
}

function stringParams(element: Record<string, unknown>, path: string): Params {
  const params: Params = {};
  for (const [key, value] of Object.entries(element)) {
    if (key === 'values') {
      if (!isPlainObject(value)) {
        throw new GeneratorError('invalid-params', 'values must be a map of strings', `${path}.values`);
      }
      for (const [k, v] of Object.entries(value)) {
        if (typeof v !== 'string') throw notString(`${path}.values.${k}`);
        params[`values.${k}`] = v;
      }
    } else if (typeof value === 'string') {
      params[key] = value;
    } else {
      throw notString(`${path}.${key}`);
    }
  }
  return params;
}

function notString(path: string): GeneratorError {
  return new GeneratorError(
    'invalid-params',
    'error parsing value as string: the default templating only takes string values (quote it, or set goTemplate: true)',
    path,
  );
}
