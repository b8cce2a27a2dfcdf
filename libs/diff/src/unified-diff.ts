import { structuredPatch } from 'diff';
import { stringify } from 'yaml';
import { type Difference } from './diff-objects.js';
import { comparePaths, isPlainObject, parsePointer, type PathSegment } from './json-pointer.js';
import { LAST_APPLIED_ANNOTATION } from './last-applied.js';

/** What a person sees of one object: 16 KiB of diff at most, as the contract's comparison allows. */
export const DEFAULT_MAX_DIFF_BYTES = 16 * 1024;

export interface UnifiedDiffInput {
  /** The object as read from the cluster; null when it does not exist. */
  live: unknown;
  /** The object as a sync would leave it (see `syncedObject`); null when a sync would delete it. */
  desired: unknown;
  /** Names both sides in the headers (`apps.v1.Deployment.shop.web`, see `diffLabel`). */
  label: string;
  /** The text is cut at a line boundary so that it stays within this many UTF-8 bytes. */
  maxBytes?: number;
  /** Unchanged lines around each change (diff -u's default, 3). */
  context?: number;
  /** What the headers call the two sides (default `live` and `desired`; a plan says `base` and `head`). */
  sides?: { old: string; new: string };
}

export interface UnifiedDiff {
  /** `diff -u -N`'s output, as `kubectl diff` prints it; empty when both sides read the same. */
  text: string;
  /** True when the text was cut to `maxBytes` (its last line then says so). */
  truncated: boolean;
}

/**
 * The object's name as `kubectl diff` writes it in its file names: group.version.Kind.namespace.name,
 * without the namespace for a cluster-scoped object and the group for the core API.
 */
export function diffLabel(id: {
  apiVersion: string;
  kind: string;
  name: string;
  namespace?: string;
}): string {
  return [id.apiVersion.replace('/', '.'), id.kind, ...(id.namespace ? [id.namespace] : []), id.name].join(
    '.',
  );
}

/**
 * A unified diff of the live object against the desired one, in YAML with sorted keys, as
 * `kubectl diff` prints it. What a sync never changes (status, server-owned metadata,
 * managedFields) is left out of both sides, and a Secret's values are masked: the text leaves the
 * cluster and is stored on the hub, so it tells only which keys change, never what they hold.
 */
export function renderUnifiedDiff(input: UnifiedDiffInput): UnifiedDiff {
  const [live, desired] = maskSecretValues(shown(input.live), shown(input.desired));
  const before = live === null ? '' : yamlOf(live);
  const after = desired === null ? '' : yamlOf(desired);
  if (before === after) return { text: '', truncated: false };
  const oldName = `${input.sides?.old ?? 'live'}/${input.label}`;
  const newName = `${input.sides?.new ?? 'desired'}/${input.label}`;
  const patch = structuredPatch(oldName, newName, before, after, undefined, undefined, {
    context: input.context ?? 3,
  });
  const lines = [`diff -u -N ${oldName} ${newName}`, `--- ${oldName}`, `+++ ${newName}`];
  for (const h of patch.hunks) {
    // GNU diff names the line before an empty range (jsdiff keeps the one after).
    const oldStart = h.oldLines === 0 ? h.oldStart - 1 : h.oldStart;
    const newStart = h.newLines === 0 ? h.newStart - 1 : h.newStart;
    lines.push(`@@ -${oldStart},${h.oldLines} +${newStart},${h.newLines} @@`, ...h.lines);
  }
  return cut(lines, input.maxBytes ?? DEFAULT_MAX_DIFF_BYTES);
}

/**
 * The live object as a sync would leave it: each difference's desired value written at its path
 * (a field the manifest no longer declares removed, an element only the manifest has appended).
 * Paths name live indexes (see README), so changes inside lists land on the right element.
 */
export function syncedObject(live: unknown, differences: readonly Difference[]): unknown {
  const whole = differences.find((d) => d.path === '');
  if (whole) return whole.desired ?? null;
  const out: unknown = structuredClone(live);
  const parsed = differences
    .map((d) => ({ d, path: parsePointer(d.path) }))
    .filter((p): p is { d: Difference; path: string[] } => p.path !== undefined && p.path.length > 0);
  const removals: PathSegment[][] = [];
  const emptied: string[][] = [];
  for (const { d, path } of parsed) {
    const creates = d.desired !== null && d.desired !== undefined;
    const parent = walk(out, path.slice(0, -1), creates);
    const last = path[path.length - 1] ?? '';
    if (d.desired === null || d.desired === undefined) emptied.push(path.slice(0, -1));
    if (Array.isArray(parent)) {
      const i = Number(last);
      if (d.desired === null || d.desired === undefined) removals.push([...path.slice(0, -1), i]);
      else if (d.live === null || d.live === undefined || i >= parent.length) parent.push(d.desired);
      else parent[i] = d.desired;
    } else if (isPlainObject(parent)) {
      if (d.desired === null || d.desired === undefined) delete parent[last];
      else parent[last] = d.desired;
    }
  }
  // Highest index first, so that removing one element does not move the next one to remove.
  for (const path of removals.sort((a, b) => comparePaths(b, a))) {
    const parent = walk(out, path.slice(0, -1).map(String));
    const i = path[path.length - 1];
    if (Array.isArray(parent) && typeof i === 'number') parent.splice(i, 1);
  }
  // A map left empty by a removal goes too (`labels:` with its last label), as the server drops it.
  for (const path of emptied.sort((a, b) => b.length - a.length)) {
    for (let n = path.length; n > 0; n--) {
      const node = walk(out, path.slice(0, n));
      const parent = walk(out, path.slice(0, n - 1));
      if (!isPlainObject(node) || Object.keys(node).length > 0 || !isPlainObject(parent)) break;
      delete parent[path[n - 1] ?? ''];
    }
  }
  return out;
}

/** Follows raw pointer segments; with `create`, makes the objects a new field needs on the way. */
function walk(root: unknown, path: readonly string[], create = false): unknown {
  let node = root;
  for (const seg of path) {
    if (Array.isArray(node)) node = node[Number(seg)];
    else if (isPlainObject(node)) {
      if (create && (node[seg] === undefined || node[seg] === null)) node[seg] = {};
      node = node[seg];
    } else return undefined;
  }
  return node;
}

const SERVER_METADATA = [
  'managedFields',
  'resourceVersion',
  'uid',
  'generation',
  'creationTimestamp',
  'selfLink',
] as const;

/** The object without what a sync never writes; null for an absent object. */
function shown(obj: unknown): Record<string, unknown> | null {
  if (!isPlainObject(obj)) return null;
  const { status: _status, ...rest } = structuredClone(obj);
  const metadata = rest['metadata'];
  if (isPlainObject(metadata)) for (const k of SERVER_METADATA) delete metadata[k];
  return rest;
}

/**
 * Argo CD's way: each value of a Secret's `data` and `stringData` becomes a row of `+`, one length
 * per distinct value of that key across both sides, so an unchanged value reads the same and a
 * changed one differs, and nothing of the value (not even its length) is shown. The last-applied
 * annotation, which holds the values too, is masked whole.
 */
function maskSecretValues(
  live: Record<string, unknown> | null,
  desired: Record<string, unknown> | null,
): [Record<string, unknown> | null, Record<string, unknown> | null] {
  const isSecret = (o: Record<string, unknown> | null): boolean =>
    o !== null && o['kind'] === 'Secret' && (o['apiVersion'] === 'v1' || o['apiVersion'] === undefined);
  if (!isSecret(live) && !isSecret(desired)) return [live, desired];
  const sides = [live, desired];
  for (const field of ['data', 'stringData']) {
    const keys = new Set(sides.flatMap((s) => (s && isPlainObject(s[field]) ? Object.keys(s[field]) : [])));
    for (const key of [...keys].sort()) {
      const distinct: unknown[] = [];
      for (const s of sides) {
        const map = s?.[field];
        if (!isPlainObject(map) || !Object.hasOwn(map, key)) continue;
        const value = map[key];
        let n = distinct.findIndex((v) => v === value);
        if (n < 0) n = distinct.push(value) - 1;
        map[key] = '+'.repeat(8 + n);
      }
    }
  }
  for (const s of sides) {
    const annotations = isPlainObject(s?.['metadata']) ? s['metadata']['annotations'] : undefined;
    if (isPlainObject(annotations) && typeof annotations[LAST_APPLIED_ANNOTATION] === 'string')
      annotations[LAST_APPLIED_ANNOTATION] = '++++++++';
  }
  return [live, desired];
}

const encoder = new TextEncoder();

function byteLength(text: string): number {
  return encoder.encode(text).length;
}

function yamlOf(obj: Record<string, unknown>): string {
  return stringify(obj, { sortMapEntries: true, lineWidth: 0 });
}

const TRUNCATED = (total: number, shownLines: number, max: number): string =>
  `... diff truncated at ${max} bytes: ${total - shownLines} more line(s) not shown`;

/** Whole lines while they fit in `max` bytes with the closing note; the note says what was left out. */
function cut(lines: string[], max: number): UnifiedDiff {
  const full = `${lines.join('\n')}\n`;
  if (byteLength(full) <= max) return { text: full, truncated: false };
  // Room for the note, whatever the line count it names.
  const budget = max - byteLength(TRUNCATED(lines.length, 0, max)) - 2;
  let used = 0;
  let n = 0;
  for (const line of lines) {
    const size = byteLength(line) + 1;
    if (used + size > budget) break;
    used += size;
    n++;
  }
  const kept = lines.slice(0, n);
  return { text: `${[...kept, TRUNCATED(lines.length, n, max)].join('\n')}\n`, truncated: true };
}
