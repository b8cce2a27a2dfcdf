import semver from 'semver';
import { parse } from 'yaml';
import { ManifestError } from '../manifest-error.js';

/** A dependency `helm template` needs in `charts/` that the chart does not carry. */
export type MissingDependency =
  | {
      kind: 'repository';
      name: string;
      /** An exact version: from Chart.lock, or Chart.yaml when it names one. */
      version: string;
      /** `https://…`, `http://…` or `oci://…`. */
      repository: string;
    }
  | {
      kind: 'file';
      name: string;
      /** The `file://` path, relative to the chart's directory. */
      path: string;
    };

interface Declared {
  name: string;
  version: string;
  repository: string;
}

/**
 * Which of a chart's dependencies must be fetched before `helm template` can render it, as
 * `helm dependency build` decides: those declared in Chart.yaml with no package or directory of
 * theirs in `charts/`. Remote versions come from Chart.lock, as `dependency build` reads them, so
 * what a commit renders is fixed by the commit; without a lock only an exact version is accepted (a
 * range would render differently as the repository changes: run `helm dependency update` and
 * commit Chart.lock). `vendored` lists the entries of `charts/`.
 */
export function missingDependencies(
  chartYaml: string,
  chartLock: string | undefined,
  vendored: readonly string[],
  at: string,
): MissingDependency[] {
  const declared = declaredDependencies(chartYaml, `${at}/Chart.yaml`);
  if (declared.length === 0) return [];
  const locked = chartLock === undefined ? undefined : lockedVersions(chartLock, `${at}/Chart.lock`);
  const missing: MissingDependency[] = [];
  declared.forEach((dep, i) => {
    if (isVendored(dep.name, vendored)) return;
    const field = `${at}/Chart.yaml: dependencies[${i}] (${dep.name})`;
    if (dep.repository === '') {
      throw new ManifestError(
        'manifest-chart-not-found',
        field,
        'has no repository and is not in charts/: vendor it there or name its repository',
      );
    }
    if (dep.repository.startsWith('file://')) {
      missing.push({ kind: 'file', name: dep.name, path: dep.repository.slice('file://'.length) });
      return;
    }
    if (dep.repository.startsWith('@') || dep.repository.startsWith('alias:')) {
      throw new ManifestError(
        'manifest-chart-not-found',
        field,
        `repository "${dep.repository}" names a repository added with helm repo add; give its URL (https://, http:// or oci://)`,
      );
    }
    if (!/^(https?|oci):\/\//.test(dep.repository)) {
      throw new ManifestError(
        'manifest-chart-not-found',
        field,
        `repository "${dep.repository}" is not a Helm repository URL (https://, http://, oci:// or file://)`,
      );
    }
    const lockedVersion = locked?.get(`${dep.name}\0${dep.repository}`);
    if (locked !== undefined && lockedVersion === undefined) {
      throw new ManifestError(
        'manifest-chart-not-found',
        field,
        'is not in Chart.lock: run helm dependency update and commit Chart.lock',
      );
    }
    const version = lockedVersion ?? semver.valid(dep.version, { loose: true });
    if (version === null) {
      throw new ManifestError(
        'manifest-chart-not-found',
        field,
        `version "${dep.version}" is a range and the chart has no Chart.lock; a commit must fix what it renders: run helm dependency update and commit Chart.lock`,
      );
    }
    missing.push({ kind: 'repository', name: dep.name, version, repository: dep.repository });
  });
  return missing;
}

function declaredDependencies(text: string, where: string): Declared[] {
  const list = (readYaml(text, where) as { dependencies?: unknown } | null)?.dependencies;
  if (list === undefined || list === null) return [];
  if (!Array.isArray(list))
    throw new ManifestError('manifest-chart-not-found', where, '"dependencies" is not a list');
  return list.map((item, i) => {
    const d = (item ?? {}) as Record<string, unknown>;
    const name = d['name'];
    if (typeof name !== 'string' || name === '') {
      throw new ManifestError(
        'manifest-chart-not-found',
        where,
        `dependencies[${i}].name must be a non-empty string`,
      );
    }
    return {
      name,
      // YAML reads `version: 1.0` as a number; Helm reads the text.
      version:
        typeof d['version'] === 'string' || typeof d['version'] === 'number' ? String(d['version']) : '',
      repository: typeof d['repository'] === 'string' ? d['repository'].trim() : '',
    };
  });
}

/** Chart.lock: `dependencies: [{name, repository, version}]` → version by (name, repository). */
function lockedVersions(text: string, where: string): Map<string, string> {
  const list = (readYaml(text, where) as { dependencies?: unknown } | null)?.dependencies;
  const out = new Map<string, string>();
  if (!Array.isArray(list)) return out;
  for (const item of list) {
    const d = (item ?? {}) as Record<string, unknown>;
    if (typeof d['name'] === 'string' && typeof d['version'] === 'string') {
      out.set(
        `${d['name']}\0${typeof d['repository'] === 'string' ? d['repository'].trim() : ''}`,
        d['version'],
      );
    }
  }
  return out;
}

/** Helm loads `charts/<name>/` directories and `charts/*.tgz` packages (named `<name>-<version>.tgz`). */
function isVendored(name: string, vendored: readonly string[]): boolean {
  return vendored.some(
    (entry) =>
      entry === name ||
      (entry.startsWith(`${name}-`) &&
        entry.endsWith('.tgz') &&
        semver.valid(entry.slice(name.length + 1, -4)) !== null),
  );
}

function readYaml(text: string, where: string): unknown {
  try {
    return parse(text, { maxAliasCount: 100 });
  } catch (e) {
    throw new ManifestError(
      'manifest-chart-not-found',
      where,
      `is not valid YAML: ${(e as Error).message.split('\n')[0]}`,
    );
  }
}
