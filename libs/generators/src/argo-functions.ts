import { stringify } from 'yaml';
import { FunctionError, type FuncMap, goFunction, goJson, strval } from '@flotilla/gotemplate';
import { parseYamlData } from './yaml-data.js';

/**
 * Argo CD's SanitizeName (`normalize`, and the `*Normalized` params): lower case, anything but
 * [-a-z0-9.] becomes '-', at most 253 characters, no leading or trailing '-' or '.'.
 */
export function sanitizeName(name: string): string {
  let out = name.toLowerCase().replace(/[^-a-z0-9.]/g, '-');
  if (out.length > 253) out = out.slice(0, 253);
  return out.replace(/^[-.]+|[-.]+$/g, '');
}

/** Argo CD's `slugify [maxSize=50] [smartTruncate=true] name` (gosimple/slug over a sanitized name). */
export function slugify(name: string, maxSize = 50, smartTruncate = true): string {
  let slug = sanitizeName(name.trim())
    .replace(/[^a-zA-Z0-9\-_]/g, '-')
    .replace(/-+/g, '-')
    .replace(/^[-_]+|[-_]+$/g, '');
  if (maxSize > 0 && slug.length > maxSize) {
    if (smartTruncate) {
      let cut = -1;
      for (let i = maxSize; i >= 0; i--) {
        if (slug[i] === '-') {
          cut = i;
          break;
        }
      }
      slug = cut >= 0 ? slug.slice(0, cut) : slug.slice(0, maxSize);
    } else slug = slug.slice(0, maxSize);
  }
  return slug;
}

/** sigs.k8s.io/yaml.Marshal (JSON first, so sorted keys), minus the trailing newline, as Argo CD's toYaml. */
export function toYaml(value: unknown): string {
  if (value === null || value === undefined) return 'null';
  const plain = JSON.parse(goJson(value, { escapeHtml: false })) as unknown;
  return stringify(plain, { indentSeq: false, sortMapEntries: true, lineWidth: 0 }).replace(/\n$/, '');
}

function jsonKind(v: unknown): string {
  if (typeof v === 'string') return 'string';
  if (typeof v === 'number') return 'number';
  if (typeof v === 'boolean') return 'bool';
  return Array.isArray(v) ? 'array' : 'object';
}

/** sigs.k8s.io/yaml.Unmarshal into a map or a slice: null is empty, another shape is an error. */
function fromYamlAs(text: string, want: 'map' | 'array'): unknown {
  let v: unknown;
  try {
    v = parseYamlData(text);
  } catch (err) {
    throw new FunctionError(`error converting YAML to JSON: ${(err as Error).message}`);
  }
  if (v === null || v === undefined) return want === 'map' ? {} : [];
  const ok = want === 'map' ? typeof v === 'object' && !Array.isArray(v) : Array.isArray(v);
  if (!ok) {
    const goType = want === 'map' ? 'map[string]interface {}' : '[]interface {}';
    throw new FunctionError(
      `error unmarshaling JSON: while decoding JSON: json: cannot unmarshal ${jsonKind(v)} into Go value of type ${goType}`,
    );
  }
  return v;
}

/** The functions Argo CD adds to Sprig. */
export const ARGO_FUNCTIONS: FuncMap = {
  normalize: goFunction(['string'], (s) => sanitizeName(s as string)),
  slugify: goFunction(
    [],
    (...args) => {
      const name = args.length > 0 ? args[args.length - 1] : '';
      if (typeof name !== 'string')
        throw new FunctionError(`slugify: the name must be a string, not ${strval(name)}`);
      const max = args.length > 1 ? Number(args[0]) : 50;
      const smart = args.length > 2 ? args[1] === true : true;
      return slugify(name, max, smart);
    },
    'any',
  ),
  toYaml: goFunction(['any'], (v) => {
    try {
      return toYaml(v);
    } catch (err) {
      throw new FunctionError((err as Error).message);
    }
  }),
  fromYaml: goFunction(['string'], (s) => fromYamlAs(s as string, 'map')),
  fromYamlArray: goFunction(['string'], (s) => fromYamlAs(s as string, 'array')),
};
