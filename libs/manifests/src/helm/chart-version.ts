import semver from 'semver';
import { parse } from 'yaml';
import { ManifestError } from '../manifest-error.js';

/** One version of a chart as a Helm repository's `index.yaml` lists it. */
export interface ChartVersion {
  name: string;
  version: string;
  /** Absolute URL of the packaged chart. */
  url: string;
  /** `sha256` hex of the package, when the index gives one. */
  digest?: string;
}

/** A Helm repository index: chart name → versions. */
export type ChartIndex = Map<string, ChartVersion[]>;

/**
 * Parses a Helm repository's `index.yaml` fetched from `repoURL`. Package URLs relative to the index
 * are made absolute, as Helm does. Throws ManifestError naming the repository when it is not an index.
 */
export function parseChartIndex(text: string, repoURL: string): ChartIndex {
  const where = `${repoURL.replace(/\/+$/, '')}/index.yaml`;
  let doc: unknown;
  try {
    doc = parse(text, { maxAliasCount: 100 });
  } catch (e) {
    throw new ManifestError(
      'manifest-chart-not-found',
      where,
      `is not valid YAML: ${(e as Error).message.split('\n')[0]}`,
    );
  }
  const entries = (doc as { entries?: unknown } | null)?.entries;
  if (typeof entries !== 'object' || entries === null || Array.isArray(entries)) {
    throw new ManifestError(
      'manifest-chart-not-found',
      where,
      'is not a Helm repository index (no "entries" mapping)',
    );
  }
  const base = `${repoURL.replace(/\/+$/, '')}/`;
  const index: ChartIndex = new Map();
  for (const [name, list] of Object.entries(entries as Record<string, unknown>)) {
    if (!Array.isArray(list)) continue;
    const versions: ChartVersion[] = [];
    for (const item of list as unknown[]) {
      if (typeof item !== 'object' || item === null) continue;
      const e = item as Record<string, unknown>;
      const urls = e['urls'];
      const version = e['version'];
      if (typeof version !== 'string' || !Array.isArray(urls) || typeof urls[0] !== 'string') continue;
      const v: ChartVersion = { name, version, url: new URL(urls[0], base).toString() };
      if (typeof e['digest'] === 'string' && e['digest'] !== '') v.digest = e['digest'];
      versions.push(v);
    }
    index.set(name, versions);
  }
  return index;
}

/**
 * The version of `chart` that `targetRevision` asks for, as Argo CD resolves it: an exact version
 * must be listed; anything else is a semver constraint (`1.2.x`, `~1.2`, `^1.2.3`, `>=1.0 <2`,
 * `>=1.0, <2`, `1.0 - 1.4`, `*`, or empty = the latest) and the highest matching version wins.
 * Pre-releases match only a constraint that names one, as in Helm.
 */
export function resolveChartVersion(
  index: ChartIndex,
  chart: string,
  targetRevision: string,
  repoURL: string,
): ChartVersion {
  const versions = index.get(chart);
  if (!versions || versions.length === 0) {
    throw new ManifestError('manifest-chart-not-found', repoURL, `the repository has no chart "${chart}"`);
  }
  const wanted = targetRevision.trim();
  const exact = semver.valid(wanted, { loose: true });
  if (exact !== null) {
    const hit = versions.find(
      (v) => semver.valid(v.version, { loose: true }) === exact || v.version === wanted,
    );
    if (!hit) {
      throw new ManifestError(
        'manifest-chart-not-found',
        repoURL,
        `chart "${chart}" has no version ${wanted} (latest: ${latest(versions) ?? 'none'})`,
      );
    }
    return hit;
  }
  // Helm's constraints (Masterminds/semver) separate AND-ed terms with commas; npm's with spaces.
  const range = semver.validRange(wanted === '' ? '*' : wanted.replaceAll(',', ' '), { loose: true });
  if (range === null) {
    throw new ManifestError(
      'manifest-chart-not-found',
      repoURL,
      `targetRevision "${wanted}" of chart "${chart}" is neither a version nor a semver range`,
    );
  }
  let best: ChartVersion | undefined;
  for (const v of versions) {
    if (!semver.satisfies(v.version, range, { loose: true })) continue;
    if (!best || semver.gt(v.version, best.version, { loose: true })) best = v;
  }
  if (!best) {
    throw new ManifestError(
      'manifest-chart-not-found',
      repoURL,
      `chart "${chart}" has no version matching "${wanted}" (latest: ${latest(versions) ?? 'none'})`,
    );
  }
  return best;
}

function latest(versions: ChartVersion[]): string | undefined {
  const valid = versions.map((v) => v.version).filter((v) => semver.valid(v, { loose: true }) !== null);
  const sorted = valid.sort((a, b) => semver.rcompare(a, b, { loose: true }));
  // The latest release, as `helm search` shows it; a pre-release only when there is nothing else.
  return sorted.find((v) => semver.prerelease(v, { loose: true }) === null) ?? sorted[0];
}
