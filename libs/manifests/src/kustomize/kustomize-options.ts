import { stringify } from 'yaml';
import { ManifestError } from '../manifest-error.js';

/** A kustomize `images` entry, as a kustomization writes it. */
export interface ImageOverride {
  name: string;
  newName?: string;
  newTag?: string;
  digest?: string;
}

/**
 * The per-target overrides Flotilla applies from Argo CD's `spec.source.kustomize`, normalised.
 * An empty object means "render the kustomization as committed".
 */
export interface KustomizeOptions {
  namePrefix?: string;
  nameSuffix?: string;
  namespace?: string;
  commonLabels?: Record<string, string>;
  commonAnnotations?: Record<string, string>;
  images?: ImageOverride[];
}

// `version` picks a kustomize binary in Argo CD; the hub has one, so it is accepted and ignored.
const IGNORED_FIELDS = new Set(['version']);
const STRING_FIELDS = ['namePrefix', 'nameSuffix', 'namespace'] as const;
const MAP_FIELDS = ['commonLabels', 'commonAnnotations'] as const;

/**
 * Validates Argo CD's `source.kustomize` block into KustomizeOptions. `at` is the field path used in
 * errors (`targets[3].spec.source.kustomize`). Unsupported fields are refused by name rather than
 * silently ignored, so a target never renders differently from what its author asked for.
 */
export function parseKustomizeOptions(raw: unknown, at = 'spec.source.kustomize'): KustomizeOptions {
  if (raw === undefined || raw === null) return {};
  if (typeof raw !== 'object' || Array.isArray(raw)) {
    throw new ManifestError('manifest-invalid-kustomize-options', at, 'must be a mapping');
  }
  const input = raw as Record<string, unknown>;
  const out: KustomizeOptions = {};
  for (const key of Object.keys(input).sort()) {
    const value = input[key];
    if (IGNORED_FIELDS.has(key) || value === undefined || value === null) continue;
    if ((STRING_FIELDS as readonly string[]).includes(key)) {
      if (typeof value !== 'string') {
        throw new ManifestError('manifest-invalid-kustomize-options', `${at}.${key}`, 'must be a string');
      }
      if (value !== '') out[key as (typeof STRING_FIELDS)[number]] = value;
    } else if ((MAP_FIELDS as readonly string[]).includes(key)) {
      const map = stringMap(value, `${at}.${key}`);
      if (Object.keys(map).length > 0) out[key as (typeof MAP_FIELDS)[number]] = map;
    } else if (key === 'images') {
      if (!Array.isArray(value)) {
        throw new ManifestError(
          'manifest-invalid-kustomize-options',
          `${at}.images`,
          'must be a list of strings',
        );
      }
      const images = value.map((v, i) => parseImageOverride(v, `${at}.images[${i}]`));
      if (images.length > 0) out.images = images;
    } else {
      throw new ManifestError(
        'manifest-invalid-kustomize-options',
        `${at}.${key}`,
        'is not supported (supported: namePrefix, nameSuffix, namespace, commonLabels, commonAnnotations, images)',
      );
    }
  }
  return out;
}

/** Whether the options change anything (no overlay is needed when they do not). */
export function hasKustomizeOverrides(options: KustomizeOptions): boolean {
  return Object.keys(options).length > 0;
}

/**
 * One Argo CD image override (`kustomize edit set image` syntax): `nginx:1.27`, `nginx@sha256:…`,
 * `nginx=registry.example/nginx:1.27`, `nginx=registry.example/nginx@sha256:…`, `nginx=mirror/nginx`.
 */
export function parseImageOverride(raw: unknown, at: string): ImageOverride {
  if (typeof raw !== 'string' || raw.trim() === '') {
    throw new ManifestError(
      'manifest-invalid-kustomize-options',
      at,
      'must be a non-empty image string like "nginx:1.27"',
    );
  }
  const text = raw.trim();
  const eq = text.indexOf('=');
  if (eq === 0)
    throw new ManifestError(
      'manifest-invalid-kustomize-options',
      at,
      `"${text}" has no image name before "="`,
    );
  if (eq > 0) {
    const name = text.slice(0, eq);
    const { image, tag, digest } = splitImage(text.slice(eq + 1), at);
    return {
      name,
      ...(image !== name && { newName: image }),
      ...(tag && { newTag: tag }),
      ...(digest && { digest }),
    };
  }
  const { image, tag, digest } = splitImage(text, at);
  if (!tag && !digest) {
    throw new ManifestError(
      'manifest-invalid-kustomize-options',
      at,
      `"${text}" sets neither a tag, a digest nor a new name`,
    );
  }
  return { name: image, ...(tag && { newTag: tag }), ...(digest && { digest }) };
}

function splitImage(ref: string, at: string): { image: string; tag?: string; digest?: string } {
  if (ref === '')
    throw new ManifestError('manifest-invalid-kustomize-options', at, 'the image after "=" is empty');
  const atSign = ref.indexOf('@');
  if (atSign >= 0) return { image: ref.slice(0, atSign), digest: ref.slice(atSign + 1) };
  // A ':' after the last '/' is a tag; one before it is a registry port.
  const colon = ref.lastIndexOf(':');
  if (colon > ref.lastIndexOf('/')) return { image: ref.slice(0, colon), tag: ref.slice(colon + 1) };
  return { image: ref };
}

function stringMap(value: unknown, at: string): Record<string, string> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ManifestError('manifest-invalid-kustomize-options', at, 'must be a mapping of strings');
  }
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(value).sort(([a], [b]) => (a < b ? -1 : 1))) {
    if (typeof v !== 'string') {
      throw new ManifestError('manifest-invalid-kustomize-options', `${at}.${k}`, 'must be a string');
    }
    out[k] = v;
  }
  return out;
}

/**
 * The kustomization.yaml of a generated overlay that applies `options` on top of `resources`
 * (paths relative to the overlay's directory: the committed kustomization's directory, or the plain
 * manifest files of a directory that has none, as Argo CD does).
 */
export function overlayKustomization(resources: readonly string[], options: KustomizeOptions): string {
  const doc: Record<string, unknown> = {
    apiVersion: 'kustomize.config.k8s.io/v1beta1',
    kind: 'Kustomization',
    resources: [...resources],
  };
  if (options.namePrefix) doc['namePrefix'] = options.namePrefix;
  if (options.nameSuffix) doc['nameSuffix'] = options.nameSuffix;
  if (options.namespace) doc['namespace'] = options.namespace;
  if (options.commonLabels) doc['commonLabels'] = options.commonLabels;
  if (options.commonAnnotations) doc['commonAnnotations'] = options.commonAnnotations;
  if (options.images) doc['images'] = options.images;
  return stringify(doc);
}
