import { describe, expect, it } from 'vitest';
import { ManifestError } from '../manifest-error.js';
import { missingDependencies } from './chart-dependencies.js';

const chartYaml = (deps: string) => `apiVersion: v2\nname: umbrella\nversion: 1.0.0\ndependencies:\n${deps}`;
const WEB = '  - name: web\n    version: ^1.0.0\n    repository: https://charts.example.com\n';
const LOCK = 'dependencies:\n  - name: web\n    repository: https://charts.example.com\n    version: 1.1.0\n';

function refusal(run: () => unknown): ManifestError {
  try {
    run();
  } catch (e) {
    if (e instanceof ManifestError) return e;
    throw e;
  }
  throw new Error('accepted');
}

describe('missingDependencies', () => {
  it('a chart without dependencies, or carrying them in charts/, needs nothing', () => {
    expect(missingDependencies('apiVersion: v2\nname: x\nversion: 1.0.0\n', undefined, [], 'c')).toEqual([]);
    expect(missingDependencies(chartYaml(WEB), undefined, ['web-1.1.0.tgz'], 'c')).toEqual([]);
    expect(missingDependencies(chartYaml(WEB), undefined, ['web'], 'c')).toEqual([]);
  });

  it('takes the version Chart.lock fixed, as helm dependency build does', () => {
    expect(missingDependencies(chartYaml(WEB), LOCK, ['README.md'], 'c')).toEqual([
      { kind: 'repository', name: 'web', version: '1.1.0', repository: 'https://charts.example.com' },
    ]);
  });

  it('accepts an exact version without a lock, from an OCI registry too', () => {
    const deps = '  - name: web\n    version: 2.0.0\n    repository: oci://registry.example.com/charts\n';
    expect(missingDependencies(chartYaml(deps), undefined, [], 'c')).toEqual([
      { kind: 'repository', name: 'web', version: '2.0.0', repository: 'oci://registry.example.com/charts' },
    ]);
  });

  it('copies a file:// dependency', () => {
    const deps = '  - name: lib\n    version: 0.1.0\n    repository: file://../lib\n';
    expect(missingDependencies(chartYaml(deps), undefined, [], 'c')).toEqual([
      { kind: 'file', name: 'lib', path: '../lib' },
    ]);
  });

  it.each([
    [WEB, undefined, 'is a range and the chart has no Chart.lock'],
    [WEB, 'dependencies: []\n', 'is not in Chart.lock'],
    ['  - name: web\n    version: 1.0.0\n', undefined, 'has no repository and is not in charts/'],
    [
      '  - name: web\n    version: 1.0.0\n    repository: "@stable"\n',
      undefined,
      'names a repository added with helm repo add',
    ],
    [
      '  - name: web\n    version: 1.0.0\n    repository: git@example.com:x\n',
      undefined,
      'is not a Helm repository URL',
    ],
  ])('refuses %j (lock %j), naming the dependency', (deps, lock, message) => {
    const e = refusal(() => missingDependencies(chartYaml(deps), lock, [], 'charts/umbrella'));
    expect(e.file).toBe('charts/umbrella/Chart.yaml: dependencies[0] (web)');
    expect(e.message).toContain(message);
  });

  it('refuses a Chart.yaml whose dependencies are not a list', () => {
    expect(refusal(() => missingDependencies(chartYaml('  web: 1\n'), undefined, [], 'c')).message).toContain(
      '"dependencies" is not a list',
    );
  });
});
