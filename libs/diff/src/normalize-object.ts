import { type IgnoreRuleInput } from '@flotilla/contract';
import { compileIgnoreRules, identityOf } from './ignore-rules.js';
import { isPlainObject, removePaths } from './json-pointer.js';
import { applyServerDefaults } from './server-defaults.js';

export interface NormalizeOptions {
  /** Fill server-side defaults (default true); the diff turns this off for the declared form. */
  defaults?: boolean;
  /** Also remove what the matching ignore rules designate (JSON pointers and jq paths). */
  ignoreRules?: readonly IgnoreRuleInput[];
}

/** Metadata the API server writes and owns; never part of what a manifest asks for. */
const SERVER_METADATA = [
  'uid',
  'resourceVersion',
  'generation',
  'creationTimestamp',
  'managedFields',
  'selfLink',
  'deletionTimestamp',
  'deletionGracePeriodSeconds',
];

/**
 * The form in which the agent and the CLI compare objects: a deep copy without `status` and
 * server-owned metadata, without nulls (a manifest's `null` and an absent field mean the same),
 * with a Secret's write-only `stringData` folded into base64 `data` as the server does, and —
 * unless `defaults: false` — with the server's defaults filled in; with `ignoreRules`, without the
 * fields the matching rules ignore. Throws DiffError for a rule that cannot work.
 */
export function normalizeObject(obj: unknown, opts: NormalizeOptions = {}): unknown {
  if (!isPlainObject(obj)) return obj;
  const out = withoutNulls(obj) as Record<string, unknown>;
  delete out['status'];
  const metadata = out['metadata'];
  if (isPlainObject(metadata)) for (const key of SERVER_METADATA) delete metadata[key];
  if (out['kind'] === 'Secret') foldStringData(out);
  if (out['kind'] === 'Endpoints') sortEndpointSubsets(out);
  if (opts.defaults !== false) applyServerDefaults(out);
  if (opts.ignoreRules && opts.ignoreRules.length > 0) {
    const id = identityOf(obj);
    for (const rule of compileIgnoreRules(opts.ignoreRules)) {
      if (rule.matches(id)) removePaths(out, rule.pathsIn(out));
    }
  }
  return out;
}

function withoutNulls(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutNulls);
  if (!isPlainObject(value)) return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    if (v === null || v === undefined) continue;
    // defineProperty keeps a `__proto__` key from a parsed document an ordinary field.
    Object.defineProperty(out, k, {
      value: withoutNulls(v),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return out;
}

/** The server merges `stringData` into `data` (stringData wins) and never returns it. */
function foldStringData(secret: Record<string, unknown>): void {
  const stringData = secret['stringData'];
  delete secret['stringData'];
  if (!isPlainObject(stringData)) return;
  const data = isPlainObject(secret['data']) ? secret['data'] : {};
  for (const [k, v] of Object.entries(stringData)) {
    data[k] = Buffer.from(typeof v === 'string' ? v : JSON.stringify(v), 'utf8').toString('base64');
  }
  secret['data'] = data;
}

/** The API server repacks Endpoints subsets, so their addresses come back in its order, not the manifest's. */
function sortEndpointSubsets(endpoints: Record<string, unknown>): void {
  const subsets = endpoints['subsets'];
  if (!Array.isArray(subsets)) return;
  for (const subset of subsets) {
    if (!isPlainObject(subset)) continue;
    for (const key of ['addresses', 'notReadyAddresses']) {
      const list = subset[key];
      if (Array.isArray(list)) list.sort((a, b) => compareText(fieldText(a, 'ip'), fieldText(b, 'ip')));
    }
    const ports = subset['ports'];
    if (Array.isArray(ports)) {
      for (const p of ports) if (isPlainObject(p) && p['protocol'] === undefined) p['protocol'] = 'TCP';
      ports.sort((a, b) => compareText(fieldText(a, 'name'), fieldText(b, 'name')));
    }
  }
}

function fieldText(value: unknown, key: string): string {
  const v = isPlainObject(value) ? value[key] : undefined;
  return typeof v === 'string' ? v : '';
}

function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
