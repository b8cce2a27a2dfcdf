import { LineCounter, parseAllDocuments, type Tags } from 'yaml';
import { kubeObjectSchema, refKey, refOf, type KubeObject } from '@flotilla/contract';
import { ManifestError } from './manifest-error.js';

export interface ManifestFile {
  /** Path relative to the rendered directory, '/'-separated; used in error messages. */
  path: string;
  content: string;
}

export interface ParseLimits {
  /** Largest file accepted, in bytes. */
  maxFileBytes: number;
  /** Deepest nesting of maps and lists accepted in one document. */
  maxDepth: number;
  /** Most YAML alias expansions in one document (alias bombs expand exponentially). */
  maxAliasCount: number;
}

/** How a tool's output is read, when it is not a file a person wrote. */
export interface ReadAs {
  /**
   * '1.1' reads scalars as Kubernetes' own YAML reader (go-yaml v2) does: `0644` is octal (420),
   * `yes`/`on` are booleans. '1.2' (the default for files in Git) is this library's historic reading.
   */
  yamlVersion: '1.1' | '1.2';
  /** A key repeated in one mapping: refused (default), or the last one kept, as go-yaml v2 does. */
  uniqueKeys: boolean;
}

const AS_WRITTEN: ReadAs = { yamlVersion: '1.2', uniqueKeys: true };

export const DEFAULT_PARSE_LIMITS: ParseLimits = {
  maxFileBytes: 4 * 1024 * 1024,
  maxDepth: 64,
  maxAliasCount: 100,
};

const MANIFEST_EXTENSIONS = /\.(ya?ml|json)$/i;

/** Whether a file under a rendered path holds manifests (hidden files and other extensions do not). */
export function isManifestPath(path: string): boolean {
  return MANIFEST_EXTENSIONS.test(path) && !path.split('/').some((part) => part.startsWith('.'));
}

/**
 * Parses a directory of plain YAML/JSON manifests (already read by the caller) into Kubernetes
 * objects: multi-document files, `v1 List` expanded, empty documents skipped. The result is sorted
 * by group, kind, namespace and name, so the same objects always make the same bundle whatever the
 * file layout. Any unusable document fails the whole set: a partial render is never a bundle.
 */
export function parseManifestFiles(
  files: ManifestFile[],
  limits: ParseLimits = DEFAULT_PARSE_LIMITS,
): KubeObject[] {
  return parseRenderedManifests(
    files.filter((f) => isManifestPath(f.path)),
    limits,
  );
}

/**
 * As parseManifestFiles, for the output of a tool (kustomize, helm) split by the file each document
 * came from: every file is read whatever its name (a Helm template may be called `x.tpl`).
 */
export function parseRenderedManifests(
  files: ManifestFile[],
  limits: ParseLimits = DEFAULT_PARSE_LIMITS,
  readAs: ReadAs = AS_WRITTEN,
): KubeObject[] {
  const byKey = new Map<string, { obj: KubeObject; file: string }>();
  const sorted = [...files].sort((a, b) => (a.path < b.path ? -1 : 1));
  for (const file of sorted) {
    for (const { obj, line } of parseFile(file, limits, readAs)) {
      const ref = refOf(obj);
      const key = refKey(ref);
      const seen = byKey.get(key);
      if (seen) {
        throw new ManifestError(
          'manifest-duplicate-object',
          file.path,
          `${obj.kind} ${ref.namespace ? `${ref.namespace}/` : ''}${ref.name} is also declared in ${seen.file}`,
          line,
        );
      }
      byKey.set(key, { obj, file: file.path });
    }
  }
  return [...byKey.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, v]) => v.obj);
}

/**
 * YAML 1.1 as go-yaml v2 reads into plain values: no timestamps (they stay strings) and no base-60
 * numbers (`12:30` stays a string); octal, `yes`/`no`/`on`/`off`/`y`/`n` booleans as 1.1 has them.
 */
function asGoYamlV2(tags: Tags): Tags {
  return tags.filter((t) =>
    typeof t === 'string'
      ? !['timestamp', 'intTime', 'floatTime'].includes(t)
      : t.tag !== 'tag:yaml.org,2002:timestamp' && t.format !== 'TIME',
  );
}

function parseFile(
  file: ManifestFile,
  limits: ParseLimits,
  readAs: ReadAs,
): { obj: KubeObject; line: number }[] {
  if (Buffer.byteLength(file.content) > limits.maxFileBytes) {
    throw new ManifestError(
      'manifest-too-large',
      file.path,
      `file is larger than ${limits.maxFileBytes} bytes`,
    );
  }
  const lineCounter = new LineCounter();
  const docs = parseAllDocuments(file.content, {
    lineCounter,
    prettyErrors: false,
    uniqueKeys: readAs.uniqueKeys,
    version: readAs.yamlVersion,
    ...(readAs.yamlVersion === '1.1' && { customTags: asGoYamlV2 }),
  });
  const out: { obj: KubeObject; line: number }[] = [];
  for (const doc of Array.isArray(docs) ? docs : [docs]) {
    const line = lineCounter.linePos(doc.range[0]).line;
    const error = doc.errors[0];
    if (error) {
      throw new ManifestError(
        'manifest-invalid-yaml',
        file.path,
        error.message.split('\n')[0] ?? 'invalid YAML',
        lineCounter.linePos(error.pos[0]).line,
      );
    }
    let value: unknown;
    try {
      value = doc.toJS({ maxAliasCount: limits.maxAliasCount });
    } catch (err) {
      throw new ManifestError('manifest-invalid-yaml', file.path, (err as Error).message, line);
    }
    if (value === null || value === undefined) continue;
    if (depthOf(value, limits.maxDepth + 1) > limits.maxDepth) {
      throw new ManifestError(
        'manifest-too-deep',
        file.path,
        `document nests deeper than ${limits.maxDepth} levels`,
        line,
      );
    }
    for (const item of expandList(value)) out.push({ obj: toKubeObject(item, file.path, line), line });
  }
  return out;
}

function expandList(value: unknown): unknown[] {
  if (isRecord(value) && value['kind'] === 'List' && Array.isArray(value['items'])) return value['items'];
  return [value];
}

function toKubeObject(value: unknown, file: string, line: number): KubeObject {
  if (!isRecord(value))
    throw new ManifestError('manifest-not-an-object', file, 'document is not a mapping', line);
  const parsed = kubeObjectSchema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const path = issue?.path.join('.') || '(document)';
    throw new ManifestError(
      'manifest-missing-field',
      file,
      `${path}: ${issue?.message ?? 'invalid'} (a Kubernetes object needs apiVersion, kind and metadata.name, or metadata.generateName for a hook)`,
      line,
    );
  }
  return parsed.data;
}

function depthOf(value: unknown, stopAt: number, depth = 0): number {
  if (depth >= stopAt || value === null || typeof value !== 'object') return depth;
  let max = depth;
  for (const v of Object.values(value)) {
    max = Math.max(max, depthOf(v, stopAt, depth + 1));
    if (max >= stopAt) break;
  }
  return max;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
