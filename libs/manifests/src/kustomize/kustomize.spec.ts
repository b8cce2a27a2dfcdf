import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { ManifestError } from '../manifest-error.js';
import { checkKustomization, checkKustomizationTree } from './kustomization.js';
import { overlayKustomization, parseImageOverride, parseKustomizeOptions } from './kustomize-options.js';
import { checkTreeEntries, resolveInRepo, safeSourcePath, type TreeEntry } from './repo-paths.js';

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
    return undefined;
  } catch (e) {
    if (e instanceof ManifestError) return `${e.code} ${e.file}`;
    throw e;
  }
}

describe('resolveInRepo', () => {
  it.each([
    ['apps/web', '../base', 'apps/base'],
    ['apps/web', '../../shared', 'shared'],
    ['', './base/', 'base'],
    ['apps', '..', ''],
    ['apps/web', '../../../etc', null],
    ['', '../x', null],
    ['apps', '/etc/passwd', null],
  ])('%s + %s → %s', (from, rel, want) => {
    expect(resolveInRepo(from, rel)).toBe(want);
  });
});

describe('safeSourcePath', () => {
  it.each([
    ['apps/web', 'apps/web'],
    ['./apps/web/', 'apps/web'],
    ['.', ''],
    ['', ''],
  ])('accepts %j as %j', (input, want) => expect(safeSourcePath(input)).toBe(want));

  it.each(['../other', 'apps/../../x', '/etc', 'apps/..'])('refuses %j', (input) => {
    expect(codeOf(() => safeSourcePath(input))).toBe(`manifest-unsafe-path ${input}`);
  });
});

describe('checkTreeEntries', () => {
  const file = (path: string, size = 10): TreeEntry => ({ path, kind: 'file', size });
  const link = (path: string, linkTarget: string): TreeEntry => ({
    path,
    kind: 'symlink',
    size: 1,
    linkTarget,
  });
  const limits = { maxFileBytes: 100, maxTreeBytes: 1000 };

  it.each<[string, TreeEntry[], string | undefined]>([
    ['a plain tree', [file('a/x.yaml'), file('README.md')], undefined],
    ['a symlink inside the repository', [link('apps/web/base', '../../base')], undefined],
    [
      'a symlink climbing out',
      [link('apps/web/passwd', '../../../etc/passwd')],
      'manifest-unsafe-path apps/web/passwd',
    ],
    ['an absolute symlink', [link('x.yaml', '/etc/shadow')], 'manifest-unsafe-path x.yaml'],
    ['an oversized manifest', [file('big.yaml', 101)], 'manifest-too-large big.yaml'],
    ['an oversized Kustomization', [file('k/Kustomization', 101)], 'manifest-too-large k/Kustomization'],
    ['an oversized image, not a manifest', [file('logo.png', 500)], undefined],
    ['a tree over the total limit', [file('a.png', 600), file('b.png', 600)], 'manifest-too-large .'],
  ])('%s', (_name, entries, want) => {
    expect(codeOf(() => checkTreeEntries(entries, limits))).toBe(want);
  });
});

describe('checkKustomization', () => {
  const repoPaths = new Set(['base', 'base/kustomization.yaml', 'overlays/prod', 'example.com/x']);
  const check = (content: string, allowRemoteBases = false) =>
    codeOf(() =>
      checkKustomization({ file: 'overlays/prod/kustomization.yaml', content, repoPaths, allowRemoteBases }),
    );

  it.each<[string, string, string | undefined]>([
    ['a local base', 'resources: [../../base, deploy.yaml]', undefined],
    ['an https base', 'resources: [https://github.com/org/repo//base?ref=v1]', 'manifest-remote-base'],
    ['a github.com shorthand', 'resources: [github.com/org/repo/base]', 'manifest-remote-base'],
    ['an ssh base in components', 'components: [git@github.com:org/repo.git]', 'manifest-remote-base'],
    ['a legacy bases entry', 'bases: [git::https://example.org/repo.git]', 'manifest-remote-base'],
    ['a host-like directory that exists locally', 'resources: [../../example.com/x]', undefined],
    ['a base climbing out of the repository', 'resources: [../../../outside]', 'manifest-unsafe-path'],
    ['an absolute base', 'resources: [/etc]', 'manifest-unsafe-path'],
    ['resources that are not a list', 'resources: base', 'manifest-invalid-kustomization'],
    ['broken YAML', 'resources: [a\n  b: ]', 'manifest-invalid-kustomization'],
  ])('%s', (_name, content, want) => {
    expect(check(content)?.split(' ')[0]).toBe(want);
  });

  it('allows remote bases when configured, but never a path out of the repository', () => {
    expect(check('resources: [https://github.com/org/repo//base]', true)).toBeUndefined();
    expect(check('resources: [../../../outside]', true)?.split(' ')[0]).toBe('manifest-unsafe-path');
  });

  it('names the field and entry in the message', () => {
    expect(() =>
      checkKustomization({
        file: 'k.yaml',
        content: 'resources: [ok, https://x.example/r]',
        repoPaths,
        allowRemoteBases: false,
      }),
    ).toThrow(/resources\[1\]: "https:\/\/x\.example\/r" is a remote base/);
  });
});

describe('checkKustomizationTree', () => {
  const files: Record<string, string> = {
    'apps/web/kustomization.yaml': 'resources: [../../bases/web, extra.yaml]',
    'bases/web/kustomization.yaml': 'resources: [deploy.yaml]\ncomponents: [../../components/tls]',
    'components/tls/kustomization.yaml': 'kind: Component',
    'unrelated/kustomization.yaml': 'resources: [../../../etc]',
    'loop/a/kustomization.yaml': 'resources: [../b]',
    'loop/b/kustomization.yaml': 'resources: [../a]',
  };
  const paths = new Set<string>();
  for (const f of Object.keys(files)) {
    paths.add(f);
    for (let d = f.slice(0, f.lastIndexOf('/')); d; d = d.includes('/') ? d.slice(0, d.lastIndexOf('/')) : '')
      paths.add(d);
  }
  const read = (p: string) => files[p] ?? '';

  it('follows local references transitively and returns the directories reached', () => {
    expect(checkKustomizationTree('apps/web', paths, read, false)).toEqual([
      'apps/web',
      'bases/web',
      'apps/web/extra.yaml',
      'bases/web/deploy.yaml',
      'components/tls',
    ]);
  });

  it('ignores kustomizations the render does not reach, and survives a cycle', () => {
    expect(() => checkKustomizationTree('apps/web', paths, read, false)).not.toThrow();
    expect(checkKustomizationTree('loop/a', paths, read, false)).toEqual(['loop/a', 'loop/b']);
    expect(codeOf(() => checkKustomizationTree('unrelated', paths, read, false))).toBe(
      'manifest-unsafe-path unrelated/kustomization.yaml',
    );
  });
});

describe('parseImageOverride', () => {
  it.each([
    ['nginx:1.27', { name: 'nginx', newTag: '1.27' }],
    ['nginx@sha256:abc', { name: 'nginx', digest: 'sha256:abc' }],
    [
      'nginx=mirror.example:5000/nginx:1.27',
      { name: 'nginx', newName: 'mirror.example:5000/nginx', newTag: '1.27' },
    ],
    ['nginx=mirror/nginx', { name: 'nginx', newName: 'mirror/nginx' }],
    ['registry:5000/app:v2', { name: 'registry:5000/app', newTag: 'v2' }],
  ])('%s', (input, want) => expect(parseImageOverride(input, 'images[0]')).toEqual(want));

  it.each(['', 'nginx', '=nginx:1', 'nginx=', 7])('refuses %j', (input) => {
    expect(codeOf(() => parseImageOverride(input, 'images[0]'))).toBe(
      'manifest-invalid-kustomize-options images[0]',
    );
  });
});

describe('parseKustomizeOptions', () => {
  it('normalises the Argo CD fields Flotilla applies and ignores version', () => {
    expect(
      parseKustomizeOptions({
        namePrefix: 'prod-',
        nameSuffix: '',
        commonLabels: { tier: 'web', app: 'guestbook' },
        images: ['nginx:1.27'],
        version: 'v5.5.0',
      }),
    ).toEqual({
      namePrefix: 'prod-',
      commonLabels: { app: 'guestbook', tier: 'web' },
      images: [{ name: 'nginx', newTag: '1.27' }],
    });
    expect(parseKustomizeOptions(undefined)).toEqual({});
  });

  it.each<[unknown, string]>([
    ['x', 'manifest-invalid-kustomize-options k'],
    [{ namePrefix: 3 }, 'manifest-invalid-kustomize-options k.namePrefix'],
    [{ commonLabels: { a: 1 } }, 'manifest-invalid-kustomize-options k.commonLabels.a'],
    [{ images: 'nginx:1' }, 'manifest-invalid-kustomize-options k.images'],
    [{ patches: [] }, 'manifest-invalid-kustomize-options k.patches'],
  ])('refuses %j', (input, want) => expect(codeOf(() => parseKustomizeOptions(input, 'k'))).toBe(want));
});

describe('overlayKustomization', () => {
  it('writes a kustomization with the resources and every override', () => {
    const text = overlayKustomization(['../apps/web'], {
      namePrefix: 'eu-',
      namespace: 'web',
      commonAnnotations: { team: 'a' },
      images: [{ name: 'nginx', newTag: '1.27' }],
    });
    expect(parse(text)).toEqual({
      apiVersion: 'kustomize.config.k8s.io/v1beta1',
      kind: 'Kustomization',
      resources: ['../apps/web'],
      namePrefix: 'eu-',
      namespace: 'web',
      commonAnnotations: { team: 'a' },
      images: [{ name: 'nginx', newTag: '1.27' }],
    });
  });
});
