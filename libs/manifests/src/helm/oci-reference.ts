import { ManifestError } from '../manifest-error.js';

/** Where a chart lives in an OCI registry: `oci://<registry>/<path>` plus the chart's name. */
export interface OciChartReference {
  /** `host[:port]`, as registries and credentials name it. */
  registry: string;
  /** The repository inside the registry: `<path>/<chart>` (Helm pushes a chart there). */
  repository: string;
  /** The registry's API root: `https://host[:port]`, or `http://` for a loopback registry. */
  apiBase: string;
}

/** Helm's media type for a chart's package layer (what `helm push` uploads). */
export const HELM_CHART_LAYER_MEDIA_TYPE = 'application/vnd.cncf.helm.chart.content.v1.tar+gzip';

/**
 * The registry, repository and API root of `chart` under `repoURL` (`oci://host[:port]/path`), as
 * Helm reads them: `helm pull oci://host/path/chart`. Registries on a loopback address are spoken
 * to over plain HTTP, as Docker treats 127.0.0.0/8 as an insecure registry by default; every other
 * registry over HTTPS.
 */
export function ociChartReference(repoURL: string, chart: string, at: string): OciChartReference {
  if (!repoURL.startsWith('oci://')) {
    throw new ManifestError(
      'manifest-invalid-source',
      at,
      `"${repoURL}" is not an OCI registry URL (oci://)`,
    );
  }
  let url: URL;
  try {
    url = new URL(`https://${repoURL.slice('oci://'.length)}`);
  } catch {
    throw new ManifestError(
      'manifest-invalid-source',
      at,
      `"${repoURL}" is not an OCI registry URL (oci://host/path)`,
    );
  }
  if (url.username || url.password || url.search || url.hash) {
    throw new ManifestError(
      'manifest-invalid-source',
      at,
      `"${repoURL}" must be oci://host[:port]/path, without credentials, query or fragment`,
    );
  }
  if (!/^[a-z0-9]+(?:[._-][a-z0-9]+)*$/.test(chart)) {
    throw new ManifestError(
      'manifest-invalid-source',
      at,
      `chart "${chart}" is not a valid repository name in an OCI registry (lower-case letters, digits, . _ -)`,
    );
  }
  const path = url.pathname.replace(/^\/+|\/+$/g, '');
  const repository = path === '' ? chart : `${path}/${chart}`;
  const scheme = isLoopback(url.hostname) ? 'http' : 'https';
  return { registry: url.host, repository, apiBase: `${scheme}://${url.host}` };
}

/** Helm stores a version's `+` (build metadata) as `_` in the tag, since tags cannot hold `+`. */
export function versionOfTag(tag: string): string {
  return tag.replaceAll('_', '+');
}

export function tagOfVersion(version: string): string {
  return version.replaceAll('+', '_');
}

/** The chart package layer of an OCI image manifest that `helm push` wrote. */
export function chartLayerOf(manifest: unknown, where: string): { digest: string; size: number } {
  const layers = (manifest as { layers?: unknown } | null)?.layers;
  if (!Array.isArray(layers)) {
    throw new ManifestError('manifest-chart-not-found', where, 'is not an OCI image manifest (no "layers")');
  }
  const chart = layers.find(
    (l): l is { mediaType: string; digest: string; size: number } =>
      typeof l === 'object' &&
      l !== null &&
      (l as { mediaType?: unknown }).mediaType === HELM_CHART_LAYER_MEDIA_TYPE,
  );
  if (!chart || typeof chart.digest !== 'string' || !/^sha256:[0-9a-f]{64}$/.test(chart.digest)) {
    throw new ManifestError(
      'manifest-chart-not-found',
      where,
      `holds no Helm chart (no layer of media type ${HELM_CHART_LAYER_MEDIA_TYPE} with a sha256 digest)`,
    );
  }
  return { digest: chart.digest, size: typeof chart.size === 'number' ? chart.size : -1 };
}

/** Helm's provenance layer (`helm push` of a package with its `.prov` beside it). */
export const HELM_PROVENANCE_LAYER_MEDIA_TYPE = 'application/vnd.cncf.helm.chart.provenance.v1.prov';

/** The manifest's provenance layer, if it has one with a sha256 digest. */
export function provenanceLayerOf(manifest: unknown): { digest: string; size: number } | undefined {
  const layers = (manifest as { layers?: unknown } | null)?.layers;
  if (!Array.isArray(layers)) return undefined;
  const prov = layers.find(
    (l): l is { mediaType: string; digest: string; size?: unknown } =>
      typeof l === 'object' &&
      l !== null &&
      (l as { mediaType?: unknown }).mediaType === HELM_PROVENANCE_LAYER_MEDIA_TYPE &&
      /^sha256:[0-9a-f]{64}$/.test(String((l as { digest?: unknown }).digest)),
  );
  return prov ? { digest: prov.digest, size: typeof prov.size === 'number' ? prov.size : -1 } : undefined;
}

/** A `WWW-Authenticate` challenge: `Bearer realm="…",service="…",scope="…"` or `Basic realm="…"`. */
export interface AuthChallenge {
  scheme: string;
  params: Record<string, string>;
}

export function parseAuthChallenge(header: string): AuthChallenge {
  const space = header.indexOf(' ');
  const scheme = (space < 0 ? header : header.slice(0, space)).trim().toLowerCase();
  const params: Record<string, string> = {};
  const rest = space < 0 ? '' : header.slice(space + 1);
  for (const m of rest.matchAll(/([A-Za-z_]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^,\s]*))/g)) {
    params[(m[1] ?? '').toLowerCase()] = (m[2] ?? m[3] ?? '').replace(/\\(.)/g, '$1');
  }
  return { scheme, params };
}

function isLoopback(hostname: string): boolean {
  const h = hostname.replace(/^\[|\]$/g, '');
  return h === 'localhost' || h === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h);
}
