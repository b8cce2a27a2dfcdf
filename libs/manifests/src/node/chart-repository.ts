import { createHash } from 'node:crypto';
import { mkdir, readdir, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { extract } from 'tar';
import { resolveChartVersion, parseChartIndex, type ChartIndex } from '../helm/chart-version.js';
import { ManifestError } from '../manifest-error.js';
import { fetchChartUrl, readCapped } from './chart-http.js';
import {
  basicAuthorization,
  MAX_PROVENANCE_BYTES,
  OciRegistryClient,
  type ChartCredentialsLookup,
} from './oci-registry.js';

export interface ChartRepositoryOptions {
  /** How long a fetched index.yaml is reused before it is fetched again. */
  indexTtlMs: number;
  timeoutMs: number;
  /** Largest index.yaml or chart package accepted. */
  maxBytes: number;
  /** For tests: a fixed clock. */
  now?: () => number;
  /**
   * Credentials for a URL: sent with every file fetched from a Helm repository they match (never
   * to another host a package URL points at), and to an OCI registry when it asks.
   */
  credentials?: ChartCredentialsLookup;
}

export interface FetchedChart {
  /** The local chart directory (holds Chart.yaml). */
  dir: string;
  /** The version the constraint resolved to. */
  version: string;
  /** `sha256:<hex>` of the package as downloaded (of its manifest, for a chart in an OCI registry). */
  digest: string;
}

/** A package as downloaded, before it is unpacked: what a provenance check judges. */
export interface DownloadedChart {
  repoURL: string;
  chart: string;
  version: string;
  /** The package's file name as served (`web-1.2.0.tgz`): the name its `.prov` signs. */
  packageName: string;
  /** `sha256:<hex>` of the package (of its manifest, from an OCI registry). */
  digest: string;
  bytes: Buffer;
  /**
   * The `.prov` beside the package (a Helm repository: `<package URL>.prov`, a 404 meaning none;
   * an OCI registry: the manifest's provenance layer), fetched only when asked; null when absent.
   */
  provenance: () => Promise<string | null>;
}

/** Judges a downloaded package before it is unpacked and rendered: throws a ManifestError to refuse it. */
export type ChartPackageGate = (chart: DownloadedChart) => Promise<void>;

export const DEFAULT_CHART_REPOSITORY_OPTIONS: ChartRepositoryOptions = {
  indexTtlMs: 60_000,
  timeoutMs: 30_000,
  maxBytes: 64 * 1024 * 1024,
};

/**
 * Charts from Helm repositories: over http(s), fetches and caches `index.yaml`, resolves a version
 * or a semver range as Argo CD does, downloads the package (checked against the index's digest);
 * from an OCI registry (`oci://`), lists the chart's tags (cached as an index is) and resolves the
 * same way, then pulls the package by its manifest. Either way the package is unpacked, and `tar`
 * refuses entries that would land outside the target directory.
 */
export class ChartRepositoryClient {
  private readonly indexes = new Map<string, { at: number; index: Promise<ChartIndex> }>();
  private readonly registry: OciRegistryClient;

  constructor(private readonly options: ChartRepositoryOptions = DEFAULT_CHART_REPOSITORY_OPTIONS) {
    this.registry = new OciRegistryClient({
      timeoutMs: options.timeoutMs,
      maxBytes: options.maxBytes,
      ...(options.credentials ? { credentials: options.credentials } : {}),
    });
  }

  /** Resolves `targetRevision` against the repository's index (cached for `indexTtlMs`). */
  async resolve(repoURL: string, chart: string, targetRevision: string) {
    const index = isOci(repoURL) ? await this.registryIndex(repoURL, chart) : await this.index(repoURL);
    return resolveChartVersion(index, chart, targetRevision, repoURL);
  }

  /**
   * Resolves, downloads and unpacks a chart into `intoDir` (which must exist and be empty); `gate`
   * judges the package as downloaded (the very bytes rendered) before it is unpacked.
   */
  async fetch(
    repoURL: string,
    chart: string,
    targetRevision: string,
    intoDir: string,
    gate?: ChartPackageGate,
  ): Promise<FetchedChart> {
    const version = await this.resolve(repoURL, chart, targetRevision);
    let bytes: Buffer;
    let digest: string;
    let provenance: () => Promise<string | null>;
    let packageName = `${chart}-${version.version}.tgz`;
    if (isOci(repoURL)) {
      ({ bytes, digest, provenance } = await this.registry.pull(repoURL, chart, version.version));
    } else {
      packageName = decodeURIComponent(new URL(version.url).pathname.split('/').pop() || packageName);
      provenance = () => this.provenanceOf(version.url, chart, version.version);
      bytes = await this.get(version.url, `chart ${chart} ${version.version}`);
      const sha = createHash('sha256').update(bytes).digest('hex');
      if (version.digest && version.digest.toLowerCase() !== sha) {
        throw new ManifestError(
          'manifest-chart-not-found',
          version.url,
          `the package's sha256 is ${sha}, but the repository's index says ${version.digest}`,
        );
      }
      digest = `sha256:${sha}`;
    }
    await gate?.({ repoURL, chart, version: version.version, packageName, digest, bytes, provenance });
    const tgz = join(intoDir, '..', `${chart}-${version.version}.tgz`);
    await writeFile(tgz, bytes);
    await mkdir(intoDir, { recursive: true });
    try {
      await extract({ file: tgz, cwd: intoDir, strict: true });
    } catch (e) {
      throw new ManifestError(
        'manifest-chart-not-found',
        version.url,
        `is not a chart package: ${(e as Error).message}`,
      );
    }
    return { dir: await chartDirIn(intoDir, version.url), version: version.version, digest };
  }

  private index(repoURL: string): Promise<ChartIndex> {
    const key = repoURL.replace(/\/+$/, '');
    return this.cached(key, () =>
      this.get(`${key}/index.yaml`, 'the repository index').then((b) =>
        parseChartIndex(b.toString('utf8'), repoURL),
      ),
    );
  }

  /** A registry has no index: a chart's tags are its list of versions. */
  private registryIndex(repoURL: string, chart: string): Promise<ChartIndex> {
    const key = `${repoURL.replace(/\/+$/, '')}/${chart}`;
    return this.cached(key, async () => {
      const versions = await this.registry.versions(repoURL, chart);
      return new Map([
        [chart, versions.map((version) => ({ name: chart, version, url: `${key}:${version}` }))],
      ]);
    });
  }

  private cached(key: string, load: () => Promise<ChartIndex>): Promise<ChartIndex> {
    const now = (this.options.now ?? Date.now)();
    const cached = this.indexes.get(key);
    if (cached && now - cached.at < this.options.indexTtlMs) return cached.index;
    const index = load();
    this.indexes.set(key, { at: now, index });
    // A failed fetch is not remembered: the next render asks again.
    index.catch(() => this.indexes.delete(key));
    return index;
  }

  /** `<package URL>.prov`, under the package's own credentials rules; a 404 means the package has none. */
  private async provenanceOf(packageUrl: string, chart: string, version: string): Promise<string | null> {
    const url = `${packageUrl}.prov`;
    const res = await this.request(url, `the provenance of chart ${chart} ${version}`);
    if (res.status === 404) {
      await res.body?.cancel();
      return null;
    }
    return (
      await this.checked(res, url, `the provenance of chart ${chart} ${version}`, MAX_PROVENANCE_BYTES)
    ).toString('utf8');
  }

  private async request(url: string, what: string): Promise<Response> {
    const credentials = await this.options.credentials?.(url);
    return fetchChartUrl(
      url,
      what,
      this.options.timeoutMs,
      credentials ? { authorization: basicAuthorization(credentials) } : {},
    );
  }

  private async get(url: string, what: string): Promise<Buffer> {
    return this.checked(await this.request(url, what), url, what, this.options.maxBytes);
  }

  private async checked(res: Response, url: string, what: string, maxBytes: number): Promise<Buffer> {
    if (!res.ok) {
      await res.body?.cancel();
      const refused = res.status === 401 || res.status === 403;
      throw new ManifestError(
        'manifest-chart-not-found',
        url,
        `cannot fetch ${what}: HTTP ${res.status}${refused ? ' (the repository wants credentials: flotilla chart-repositories add)' : ''}`,
      );
    }
    return readCapped(res, maxBytes, url, what);
  }
}

const isOci = (repoURL: string) => repoURL.startsWith('oci://');

/** A package holds one top-level directory with the chart; its name is the chart's. */
async function chartDirIn(dir: string, url: string): Promise<string> {
  for (const name of (await readdir(dir)).sort()) {
    const candidate = join(dir, name);
    try {
      if ((await stat(join(candidate, 'Chart.yaml'))).isFile()) return candidate;
    } catch {
      // not this one
    }
  }
  throw new ManifestError('manifest-chart-not-found', url, 'the package holds no Chart.yaml');
}
