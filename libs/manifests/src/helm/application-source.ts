import { ManifestError } from '../manifest-error.js';
import { safeSourcePath } from '../kustomize/repo-paths.js';
import { parseHelmOptions, type HelmOptions } from './helm-options.js';

/** A chart in a Helm repository (`https://…`, `http://…` or `oci://…`). */
export interface ChartSource {
  kind: 'chart';
  /** Field path of the source in its Application, for errors (`spec.sources[1]`). */
  at: string;
  repoURL: string;
  chart: string;
  /** A version or a semver range; empty = the latest. */
  targetRevision: string;
  helm: HelmOptions;
  ref?: string;
}

/** A directory of a Git repository: plain manifests, a kustomization or a Helm chart. */
export interface GitSource {
  kind: 'git';
  at: string;
  repoURL: string;
  targetRevision: string;
  /** Repository-relative directory, '' = the root. */
  path: string;
  /** Set when the source carries a `helm` block (the directory must be a chart then). */
  helm?: HelmOptions;
  kustomize?: unknown;
  ref?: string;
}

/** A `ref:` source without path or chart: only a name for `$ref/…` value files, rendered on its own never. */
export interface RefSource {
  kind: 'ref';
  at: string;
  repoURL: string;
  targetRevision: string;
  ref: string;
}

export type ApplicationSource = ChartSource | GitSource | RefSource;

/** The fields of an Application source that Flotilla reads; any other is refused by name. */
export const APPLICATION_SOURCE_FIELDS: readonly string[] = [
  'repoURL',
  'path',
  'targetRevision',
  'chart',
  'helm',
  'kustomize',
  'ref',
  'name',
];

/**
 * An Application's `spec.source` or `spec.sources` (Argo CD's shapes), checked: every source has a
 * repoURL, a chart source has no path, a `ref` is a plain name used once, `$ref/…` value files name a
 * declared ref, and fields Flotilla does not render (`directory`, `plugin`, …) are refused by name.
 */
export function parseApplicationSources(spec: unknown, at = 'spec'): ApplicationSource[] {
  if (typeof spec !== 'object' || spec === null || Array.isArray(spec)) {
    throw new ManifestError('manifest-invalid-source', at, 'must be a mapping');
  }
  const s = spec as Record<string, unknown>;
  const hasOne = s['source'] !== undefined && s['source'] !== null;
  const hasMany = s['sources'] !== undefined && s['sources'] !== null;
  if (hasOne && hasMany) {
    throw new ManifestError('manifest-invalid-source', at, 'has both source and sources; give one of them');
  }
  if (!hasOne && !hasMany) throw new ManifestError('manifest-invalid-source', `${at}.source`, 'is required');
  let sources: ApplicationSource[];
  if (hasOne) {
    sources = [parseSource(s['source'], `${at}.source`)];
  } else {
    const list = s['sources'];
    if (!Array.isArray(list) || list.length === 0) {
      throw new ManifestError(
        'manifest-invalid-source',
        `${at}.sources`,
        'must be a non-empty list of sources',
      );
    }
    sources = list.map((item, i) => parseSource(item, `${at}.sources[${i}]`));
  }
  const refs = new Set<string>();
  for (const src of sources) {
    if (src.kind !== 'ref' && src.ref === undefined) continue;
    const ref = src.ref as string;
    if (refs.has(ref))
      throw new ManifestError('manifest-invalid-source', `${src.at}.ref`, `"${ref}" is used twice`);
    refs.add(ref);
  }
  for (const src of sources) {
    if (src.kind === 'ref' || !src.helm) continue;
    src.helm.valueFiles.forEach((file, i) => {
      const ref = refOfValueFile(file);
      if (ref === undefined) return;
      if (!hasMany) {
        throw new ManifestError(
          'manifest-invalid-source',
          `${src.at}.helm.valueFiles[${i}]`,
          `"${file}" refers to a ref source, which only a multi-source Application (spec.sources) has`,
        );
      }
      if (!refs.has(ref)) {
        throw new ManifestError(
          'manifest-invalid-source',
          `${src.at}.helm.valueFiles[${i}]`,
          `"${file}" names ref "${ref}", which no source declares (declared: ${[...refs].join(', ') || 'none'})`,
        );
      }
    });
  }
  if (sources.every((src) => src.kind === 'ref')) {
    throw new ManifestError('manifest-invalid-source', at, 'has only ref sources: nothing to render');
  }
  return sources;
}

/** The ref a `$ref/path` value file names, or undefined for an ordinary path. */
export function refOfValueFile(file: string): string | undefined {
  const m = /^\$([A-Za-z0-9_-]+)(\/|$)/.exec(file);
  return m ? m[1] : undefined;
}

function parseSource(raw: unknown, at: string): ApplicationSource {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new ManifestError('manifest-invalid-source', at, 'must be a mapping');
  }
  const s = raw as Record<string, unknown>;
  for (const key of Object.keys(s)) {
    if (!APPLICATION_SOURCE_FIELDS.includes(key)) {
      throw new ManifestError(
        'manifest-invalid-source',
        `${at}.${key}`,
        `is not supported (supported: ${APPLICATION_SOURCE_FIELDS.join(', ')})`,
      );
    }
  }
  const str = (key: string): string | undefined => {
    const v = s[key];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== 'string')
      throw new ManifestError('manifest-invalid-source', `${at}.${key}`, 'must be a string');
    return v;
  };
  const repoURL = str('repoURL');
  if (!repoURL) throw new ManifestError('manifest-invalid-source', `${at}.repoURL`, 'is required');
  const targetRevision = (str('targetRevision') ?? '').trim();
  const ref = str('ref');
  if (ref !== undefined && !/^[A-Za-z0-9_-]+$/.test(ref)) {
    throw new ManifestError(
      'manifest-invalid-source',
      `${at}.ref`,
      `"${ref}" must be a name of letters, digits, - and _`,
    );
  }
  const chart = str('chart');
  const path = str('path');
  const hasHelm = s['helm'] !== undefined && s['helm'] !== null;
  const hasKustomize = s['kustomize'] !== undefined && s['kustomize'] !== null;
  if (hasHelm && hasKustomize) {
    throw new ManifestError(
      'manifest-invalid-source',
      at,
      'has both helm and kustomize; a source has one renderer',
    );
  }
  if (chart !== undefined && chart !== '') {
    if (path !== undefined && path !== '') {
      throw new ManifestError(
        'manifest-invalid-source',
        `${at}.path`,
        'a chart from a Helm repository has no path',
      );
    }
    if (hasKustomize)
      throw new ManifestError('manifest-invalid-source', `${at}.kustomize`, 'does not apply to a chart');
    if (!/^(https?|oci):\/\//.test(repoURL)) {
      throw new ManifestError(
        'manifest-invalid-source',
        `${at}.repoURL`,
        `"${repoURL}" is not a Helm repository URL (https://, http:// or oci://)`,
      );
    }
    const out: ChartSource = {
      kind: 'chart',
      at,
      repoURL,
      chart,
      targetRevision,
      helm: parseHelmOptions(s['helm'], `${at}.helm`),
    };
    if (ref !== undefined) out.ref = ref;
    return out;
  }
  if ((path === undefined || path === '') && ref !== undefined && !hasHelm && !hasKustomize) {
    return { kind: 'ref', at, repoURL, targetRevision, ref };
  }
  let dir: string;
  try {
    dir = safeSourcePath(path ?? '');
  } catch (e) {
    if (e instanceof ManifestError) throw new ManifestError('manifest-unsafe-path', `${at}.path`, e.message);
    throw e;
  }
  const out: GitSource = { kind: 'git', at, repoURL, targetRevision, path: dir };
  if (hasHelm) out.helm = parseHelmOptions(s['helm'], `${at}.helm`);
  if (hasKustomize) out.kustomize = s['kustomize'];
  if (ref !== undefined) out.ref = ref;
  return out;
}
