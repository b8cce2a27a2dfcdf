import { badRequest } from '../errors.js';
import { getPath, isObject, type JsonObject, str } from '../json.js';

/** A parsed selector: true when the object matches. */
export type Matcher = (o: JsonObject) => boolean;

type Requirement = { key: string; op: '=' | '!=' | 'in' | 'notin' | 'exists' | '!'; values: string[] };

function splitTopLevel(text: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let cur = '';
  for (const ch of text) {
    if (ch === '(') depth++;
    if (ch === ')') depth--;
    if (ch === ',' && depth === 0) {
      parts.push(cur);
      cur = '';
    } else cur += ch;
  }
  if (cur.trim()) parts.push(cur);
  return parts.map((p) => p.trim()).filter(Boolean);
}

const KEY = /^([a-zA-Z0-9]([-a-zA-Z0-9_.]*[a-zA-Z0-9])?\/)?[a-zA-Z0-9]([-a-zA-Z0-9_.]*[a-zA-Z0-9])?$/;

function parseRequirement(text: string): Requirement {
  let m = /^(\S+)\s+(in|notin)\s+\(([^)]*)\)$/.exec(text);
  if (m)
    return {
      key: m[1]!,
      op: m[2] as 'in' | 'notin',
      values: m[3]!
        .split(',')
        .map((v) => v.trim())
        .filter(Boolean),
    };
  m = /^([^=!\s]+)\s*(==|=|!=)\s*(\S*)$/.exec(text);
  if (m) return { key: m[1]!, op: m[2] === '!=' ? '!=' : '=', values: [m[3]!] };
  m = /^!\s*(\S+)$/.exec(text);
  if (m) return { key: m[1]!, op: '!', values: [] };
  if (KEY.test(text)) return { key: text, op: 'exists', values: [] };
  throw badRequest(`unable to parse requirement: found '${text}', expected: in, notin, =, ==, !=, gt, lt`);
}

function test(r: Requirement, value: string | undefined): boolean {
  switch (r.op) {
    case '=':
      return value === r.values[0];
    case '!=':
      return value !== r.values[0];
    case 'in':
      return value !== undefined && r.values.includes(value);
    case 'notin':
      return value === undefined || !r.values.includes(value);
    case 'exists':
      return value !== undefined;
    case '!':
      return value === undefined;
  }
}

export function parseLabelSelector(text: string | null | undefined): Matcher {
  if (!text) return () => true;
  const reqs = splitTopLevel(text).map(parseRequirement);
  return (o) => {
    const labels = (getPath(o, ['metadata', 'labels']) ?? {}) as Record<string, string>;
    return reqs.every((r) => test(r, labels[r.key]));
  };
}

/** A LabelSelector object (matchLabels + matchExpressions) as a matcher on a label map. */
export function labelSelectorMatches(selector: unknown, labels: Record<string, string>): boolean {
  if (!isObject(selector)) return false;
  const ml = isObject(selector['matchLabels']) ? selector['matchLabels'] : {};
  for (const [k, v] of Object.entries(ml)) if (labels[k] !== v) return false;
  const exprs = Array.isArray(selector['matchExpressions']) ? selector['matchExpressions'] : [];
  for (const e of exprs) {
    if (!isObject(e)) continue;
    const key = str(e['key']);
    const values = Array.isArray(e['values']) ? e['values'].map(String) : [];
    const op = str(e['operator']);
    const v = labels[key];
    if (op === 'In' && !(v !== undefined && values.includes(v))) return false;
    if (op === 'NotIn' && v !== undefined && values.includes(v)) return false;
    if (op === 'Exists' && v === undefined) return false;
    if (op === 'DoesNotExist' && v !== undefined) return false;
  }
  return true;
}

/** `app=web,tier=front` form of a LabelSelector (Scale status.selector). */
export function selectorString(selector: unknown): string {
  if (!isObject(selector)) return '';
  const parts: string[] = [];
  const ml = isObject(selector['matchLabels']) ? selector['matchLabels'] : {};
  for (const k of Object.keys(ml).sort()) parts.push(`${k}=${str(ml[k])}`);
  const exprs = Array.isArray(selector['matchExpressions']) ? selector['matchExpressions'] : [];
  for (const e of exprs) {
    if (!isObject(e)) continue;
    const values = Array.isArray(e['values']) ? e['values'].map(String).sort().join(',') : '';
    const key = str(e['key']);
    switch (e['operator']) {
      case 'In':
        parts.push(`${key} in (${values})`);
        break;
      case 'NotIn':
        parts.push(`${key} notin (${values})`);
        break;
      case 'Exists':
        parts.push(key);
        break;
      case 'DoesNotExist':
        parts.push(`!${key}`);
        break;
      default:
    }
  }
  return parts.join(',');
}

/** Field selectors supported per kind, beyond metadata.name and metadata.namespace. */
const FIELDS: Record<string, string[]> = {
  Pod: [
    'spec.nodeName',
    'spec.restartPolicy',
    'spec.schedulerName',
    'spec.serviceAccountName',
    'status.phase',
    'status.podIP',
    'status.nominatedNodeName',
  ],
  Secret: ['type'],
  Event: [
    'involvedObject.kind',
    'involvedObject.namespace',
    'involvedObject.name',
    'involvedObject.uid',
    'involvedObject.apiVersion',
    'involvedObject.resourceVersion',
    'involvedObject.fieldPath',
    'reason',
    'reportingComponent',
    'source',
    'type',
  ],
  Namespace: ['status.phase'],
  Node: ['spec.unschedulable'],
  ReplicaSet: ['status.replicas'],
  Job: ['status.successful'],
};

export function parseFieldSelector(text: string | null | undefined, kind: string, custom: boolean): Matcher {
  if (!text) return () => true;
  const reqs = splitTopLevel(text).map((part) => {
    const m = /^([^=!]+)(==|=|!=)(.*)$/.exec(part);
    if (!m) throw badRequest(`invalid selector: '${text}'; can't understand '${part}'`);
    const field = m[1]!.trim();
    const allowed =
      field === 'metadata.name' || field === 'metadata.namespace' || (FIELDS[kind] ?? []).includes(field);
    if (!allowed && !custom) throw badRequest(`field label not supported: ${field}`);
    if (!allowed && custom)
      throw badRequest(
        `"${field}" is not a known field selector: only "metadata.name", "metadata.namespace"`,
      );
    return { path: field.split('.'), neg: m[2] === '!=', value: m[3]!.trim() };
  });
  return (o) =>
    reqs.every((r) => {
      const v = getPath(o, r.path);
      const s = v === undefined || v === null ? '' : str(v);
      return r.neg ? s !== r.value : s === r.value;
    });
}
