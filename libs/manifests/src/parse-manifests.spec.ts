import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  bundleDigest,
  canonicalJson,
  ManifestError,
  parseManifestFiles,
  verifyBundleDigest,
  type ManifestFile,
} from './index.js';

function readTree(dir: string, root = dir): ManifestFile[] {
  return readdirSync(dir).flatMap((name) => {
    const full = join(dir, name);
    return statSync(full).isDirectory()
      ? readTree(full, root)
      : [{ path: relative(root, full), content: readFileSync(full, 'utf8') }];
  });
}

const appDir = new URL('./testdata/app', import.meta.url).pathname;

function errorOf(fn: () => unknown): ManifestError {
  try {
    fn();
  } catch (err) {
    if (err instanceof ManifestError) return err;
    throw err;
  }
  throw new Error('expected a ManifestError');
}

describe('parseManifestFiles', () => {
  it('reads a directory recursively: multi-document YAML, JSON, Lists; skips hidden and non-manifest files', () => {
    const objects = parseManifestFiles(readTree(appDir));
    // Sorted by group, kind, namespace, name: the core group ('') comes before 'apps'.
    expect(objects.map((o) => `${o.kind}/${o.metadata.name}`)).toEqual([
      'ConfigMap/web-config',
      'Namespace/demo',
      'Service/web',
      'Deployment/web',
    ]);
    const cm = objects.find((o) => o.kind === 'ConfigMap');
    expect(cm?.['data']).toEqual({ greeting: 'hello' });
  });

  it('makes the same bundle digest whatever the file layout and key order', () => {
    const files = readTree(appDir);
    const reordered = files
      .reverse()
      .map((f) => (f.path.endsWith('.json') ? { ...f, path: `z/${f.path}` } : f));
    const a = parseManifestFiles(files);
    const b = parseManifestFiles(reordered);
    expect(bundleDigest(a)).toBe(bundleDigest(b));
    expect(bundleDigest(a)).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(verifyBundleDigest(a, bundleDigest(b))).toBe(true);
    const changed = structuredClone(a);
    (changed[0]!.metadata as Record<string, unknown>)['labels'] = { x: 'y' };
    expect(verifyBundleDigest(changed, bundleDigest(a))).toBe(false);
  });

  it('names the file and line of invalid YAML', () => {
    const err = errorOf(() =>
      parseManifestFiles([
        { path: 'apps/web/bad.yaml', content: 'kind: ConfigMap\nmetadata:\n  name: [oops\n' },
      ]),
    );
    expect(err.code).toBe('manifest-invalid-yaml');
    expect(err.file).toBe('apps/web/bad.yaml');
    expect(err.line).toBeGreaterThanOrEqual(3);
    expect(err.message).toContain('apps/web/bad.yaml:');
  });

  it('refuses a document that is not a Kubernetes object, naming the missing field', () => {
    const err = errorOf(() =>
      parseManifestFiles([{ path: 'x.yaml', content: 'apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n' }]),
    );
    expect(err.code).toBe('manifest-missing-field');
    expect(err.message).toContain('metadata.name');
  });

  it('reads an object named by generateName only (a hook): its name is empty, its prefix identifies it', () => {
    const hook = (prefix: string): string =>
      `apiVersion: batch/v1\nkind: Job\nmetadata:\n  generateName: ${prefix}\n  annotations: {argocd.argoproj.io/hook: PreSync}\n`;
    const objects = parseManifestFiles([
      { path: 'a.yaml', content: hook('migrate-') },
      { path: 'b.yaml', content: hook('seed-') },
    ]);
    expect(objects.map((o) => [o.metadata.name, o.metadata.generateName])).toEqual([
      ['', 'migrate-'],
      ['', 'seed-'],
    ]);
    const twice = errorOf(() =>
      parseManifestFiles([
        { path: 'a.yaml', content: hook('migrate-') },
        { path: 'c.yaml', content: hook('migrate-') },
      ]),
    );
    expect(twice.code).toBe('manifest-duplicate-object');
    expect(twice.message).toContain('Job migrate- is also declared in a.yaml');
    // An empty generateName beside a name (as a chart may render it) is no name at all.
    const named = parseManifestFiles([
      { path: 'a.yaml', content: 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, generateName: ""}\n' },
    ]);
    expect(named[0]?.metadata.name).toBe('a');
    const neither = errorOf(() =>
      parseManifestFiles([
        { path: 'a.yaml', content: 'apiVersion: v1\nkind: ConfigMap\nmetadata: {generateName: ""}\n' },
      ]),
    );
    expect(neither.message).toContain('metadata.name: name or generateName is required');
  });

  it('refuses the same object declared twice', () => {
    const doc = 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: n}\n';
    const err = errorOf(() =>
      parseManifestFiles([
        { path: 'a.yaml', content: doc },
        { path: 'b.yaml', content: doc },
      ]),
    );
    expect(err.code).toBe('manifest-duplicate-object');
    expect(err.message).toContain('a.yaml');
  });

  it('refuses alias bombs, deep nesting and oversized files', () => {
    const bomb = [
      'a: &a ["x","x","x","x","x","x","x","x","x"]',
      ...Array.from(
        { length: 8 },
        (_, i) =>
          `${String.fromCharCode(98 + i)}: &${String.fromCharCode(98 + i)} [*${String.fromCharCode(97 + i)},*${String.fromCharCode(97 + i)},*${String.fromCharCode(97 + i)},*${String.fromCharCode(97 + i)},*${String.fromCharCode(97 + i)},*${String.fromCharCode(97 + i)},*${String.fromCharCode(97 + i)},*${String.fromCharCode(97 + i)},*${String.fromCharCode(97 + i)}]`,
      ),
    ].join('\n');
    expect(errorOf(() => parseManifestFiles([{ path: 'bomb.yaml', content: bomb }])).code).toBe(
      'manifest-invalid-yaml',
    );
    const deep = `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: ${'['.repeat(80)}${']'.repeat(80)}\n`;
    expect(errorOf(() => parseManifestFiles([{ path: 'deep.yaml', content: deep }])).code).toBe(
      'manifest-too-deep',
    );
    expect(
      errorOf(() =>
        parseManifestFiles([{ path: 'big.yaml', content: 'x'.repeat(100) }], {
          maxFileBytes: 10,
          maxDepth: 64,
          maxAliasCount: 100,
        }),
      ).code,
    ).toBe('manifest-too-large');
  });
});

describe('canonicalJson', () => {
  it('sorts keys at every level and drops undefined', () => {
    expect(canonicalJson({ b: 1, a: { d: [{ z: 1, y: 2 }], c: undefined } })).toBe(
      '{"a":{"d":[{"y":2,"z":1}]},"b":1}',
    );
  });
});
