import { createHash } from 'node:crypto';
import {
  chartLayerOf,
  provenanceLayerOf,
  ociChartReference,
  parseAuthChallenge,
  tagOfVersion,
  versionOfTag,
  type OciChartReference,
} from '../helm/oci-reference.js';
import { ManifestError } from '../manifest-error.js';
import { fetchChartUrl, readCapped } from './chart-http.js';

export interface RegistryCredentials {
  username: string;
  password: string;
}

/** The credentials to send for a URL (a Helm repository's file, or an OCI chart), if any. */
export type ChartCredentialsLookup = (
  url: string,
) => RegistryCredentials | undefined | Promise<RegistryCredentials | undefined>;

export interface OciRegistryOptions {
  timeoutMs: number;
  /** Largest manifest, tag list or chart package accepted. */
  maxBytes: number;
  /** Credentials for a chart (`oci://host[:port]/path/chart`), asked when its registry wants them. */
  credentials?: ChartCredentialsLookup;
}

/** A chart package pulled from a registry, checked against the digests that name it. */
export interface PulledChart {
  /** The `.tgz` package. */
  bytes: Buffer;
  /** `sha256:<hex>` of the manifest: what `helm pull` prints and what `@sha256:` pins. */
  digest: string;
  /** The manifest's provenance layer (`.prov`), read only when asked; null when it has none. */
  provenance: () => Promise<string | null>;
}

/** Largest `.prov` accepted: a signed digest of one package is a few kilobytes. */
export const MAX_PROVENANCE_BYTES = 256 * 1024;

const MANIFEST_TYPES = [
  'application/vnd.oci.image.manifest.v1+json',
  'application/vnd.docker.distribution.manifest.v2+json',
].join(', ');

/**
 * Charts from OCI registries through the Distribution API, as `helm pull oci://…` fetches them:
 * tags listed (following the `Link` pages), the manifest read by tag, the chart layer read by digest,
 * and both digests checked against the bytes. Anonymous or token (Bearer) access, with Basic
 * credentials when a registry asks for them. No `helm registry login` state on disk: each hub
 * replica reads the same credentials.
 */
export class OciRegistryClient {
  /** Bearer tokens by registry and scope, reused until the registry refuses them. */
  private readonly tokens = new Map<string, string>();

  constructor(private readonly options: OciRegistryOptions) {}

  /** Every version the registry holds for `chart` (tags that are versions, `_` read back as `+`). */
  async versions(repoURL: string, chart: string): Promise<string[]> {
    const ref = ociChartReference(repoURL, chart, repoURL);
    const tags: string[] = [];
    let next: string | null = `${ref.apiBase}/v2/${ref.repository}/tags/list?n=1000`;
    for (let page = 0; next !== null && page < 100; page++) {
      const res = await this.request(ref, next, `chart "${chart}"`, 'application/json');
      const body = JSON.parse((await this.read(res, next, 'the tag list')).toString('utf8')) as {
        tags?: unknown;
      };
      if (Array.isArray(body.tags)) tags.push(...body.tags.filter((t): t is string => typeof t === 'string'));
      next = nextPage(res.headers.get('link'), ref.apiBase);
    }
    return tags.map(versionOfTag);
  }

  /** The package of `chart` at `version`, its manifest and layer digests checked. */
  async pull(repoURL: string, chart: string, version: string): Promise<PulledChart> {
    const ref = ociChartReference(repoURL, chart, repoURL);
    const where = `${repoURL.replace(/\/+$/, '')}/${chart}:${version}`;
    const manifestUrl = `${ref.apiBase}/v2/${ref.repository}/manifests/${tagOfVersion(version)}`;
    const res = await this.request(ref, manifestUrl, `chart "${chart}" version ${version}`, MANIFEST_TYPES);
    const manifestBytes = await this.read(res, where, 'the manifest');
    const digest = `sha256:${sha256(manifestBytes)}`;
    const announced = res.headers.get('docker-content-digest');
    if (announced && announced !== digest) {
      throw new ManifestError(
        'manifest-chart-not-found',
        where,
        `the manifest's sha256 is ${digest}, but the registry says ${announced}`,
      );
    }
    let manifest: unknown;
    try {
      manifest = JSON.parse(manifestBytes.toString('utf8'));
    } catch {
      throw new ManifestError('manifest-chart-not-found', where, 'the manifest is not JSON');
    }
    const layer = chartLayerOf(manifest, where);
    if (layer.size > this.options.maxBytes) {
      throw new ManifestError(
        'manifest-chart-not-found',
        where,
        `the chart is larger than ${this.options.maxBytes} bytes`,
      );
    }
    const blobUrl = `${ref.apiBase}/v2/${ref.repository}/blobs/${layer.digest}`;
    const bytes = await this.read(
      await this.request(ref, blobUrl, `the package of chart "${chart}" version ${version}`, '*/*'),
      where,
      'the chart package',
    );
    const got = `sha256:${sha256(bytes)}`;
    if (got !== layer.digest) {
      throw new ManifestError(
        'manifest-chart-not-found',
        where,
        `the package's sha256 is ${got}, but the manifest says ${layer.digest}`,
      );
    }
    const prov = provenanceLayerOf(manifest);
    const provenance = async () => {
      if (!prov) return null;
      if (prov.size > MAX_PROVENANCE_BYTES) {
        throw new ManifestError(
          'manifest-chart-not-found',
          where,
          `the provenance layer is larger than ${MAX_PROVENANCE_BYTES} bytes`,
        );
      }
      const url = `${ref.apiBase}/v2/${ref.repository}/blobs/${prov.digest}`;
      const res = await this.request(
        ref,
        url,
        `the provenance of chart "${chart}" version ${version}`,
        '*/*',
      );
      const body = await readCapped(res, MAX_PROVENANCE_BYTES, where, 'the provenance layer');
      if (`sha256:${sha256(body)}` !== prov.digest) {
        throw new ManifestError(
          'manifest-chart-not-found',
          where,
          `the provenance layer's sha256 is not the manifest's ${prov.digest}`,
        );
      }
      return body.toString('utf8');
    };
    return { bytes, digest, provenance };
  }

  private async request(
    ref: OciChartReference,
    url: string,
    what: string,
    accept: string,
  ): Promise<Response> {
    const scope = `repository:${ref.repository}:pull`;
    const tokenKey = `${ref.registry} ${scope}`;
    const send = (authorization?: string) =>
      this.fetch(url, what, { accept, ...(authorization ? { authorization } : {}) });
    const cached = this.tokens.get(tokenKey);
    let res = await send(cached ? `Bearer ${cached}` : undefined);
    if (res.status === 401) {
      await res.body?.cancel();
      const challenge = parseAuthChallenge(res.headers.get('www-authenticate') ?? '');
      const creds = await this.options.credentials?.(`oci://${ref.registry}/${ref.repository}`);
      if (challenge.scheme === 'bearer' && challenge.params['realm']) {
        const token = await this.token(challenge.params, scope, creds, url);
        this.tokens.set(tokenKey, token);
        res = await send(`Bearer ${token}`);
      } else if (challenge.scheme === 'basic' && creds) {
        res = await send(basicAuthorization(creds));
      } else {
        throw new ManifestError(
          'manifest-chart-not-found',
          url,
          creds
            ? `registry ${ref.registry} asks for credentials by ${challenge.scheme || 'an unknown scheme'}, which Flotilla does not speak`
            : `registry ${ref.registry} asks for credentials, and none are configured for oci://${ref.registry}/${ref.repository} (flotilla chart-repositories add)`,
        );
      }
    }
    if (res.status === 404) {
      await res.body?.cancel();
      throw new ManifestError('manifest-chart-not-found', url, `the registry has no ${what}`);
    }
    if (!res.ok) {
      await res.body?.cancel();
      throw new ManifestError('manifest-chart-not-found', url, `cannot fetch ${what}: HTTP ${res.status}`);
    }
    return res;
  }

  /** The Distribution token flow: GET realm?service=…&scope=… (with Basic credentials if any). */
  private async token(
    params: Record<string, string>,
    scope: string,
    creds: RegistryCredentials | undefined,
    url: string,
  ): Promise<string> {
    const realm = new URL(params['realm'] ?? '');
    if (params['service']) realm.searchParams.set('service', params['service']);
    realm.searchParams.set('scope', params['scope'] ?? scope);
    const res = await this.fetch(
      realm.toString(),
      'a registry token',
      creds ? { authorization: basicAuthorization(creds) } : {},
    );
    if (!res.ok) {
      await res.body?.cancel();
      throw new ManifestError(
        'manifest-chart-not-found',
        url,
        `the registry's token service refused ${creds ? 'the configured credentials' : 'anonymous access'}: HTTP ${res.status}`,
      );
    }
    const body = JSON.parse((await this.read(res, url, 'a registry token')).toString('utf8')) as {
      token?: unknown;
      access_token?: unknown;
    };
    const token = typeof body.token === 'string' ? body.token : body.access_token;
    if (typeof token !== 'string' || token === '') {
      throw new ManifestError(
        'manifest-chart-not-found',
        url,
        "the registry's token service answered without a token",
      );
    }
    return token;
  }

  private fetch(url: string, what: string, headers: Record<string, string>): Promise<Response> {
    return fetchChartUrl(url, what, this.options.timeoutMs, headers);
  }

  private read(res: Response, where: string, what: string): Promise<Buffer> {
    return readCapped(res, this.options.maxBytes, where, what);
  }
}

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');
export const basicAuthorization = (c: RegistryCredentials) =>
  `Basic ${Buffer.from(`${c.username}:${c.password}`).toString('base64')}`;

/** The next page of a tag list: `Link: </v2/…/tags/list?last=x&n=1000>; rel="next"`. */
function nextPage(link: string | null, apiBase: string): string | null {
  const m = link?.match(/<([^>]+)>\s*;\s*rel="?next"?/);
  return m?.[1] ? new URL(m[1], apiBase).toString() : null;
}
