import { describe, expect, it } from 'vitest';
import { envsubst } from './build-env.js';
import { parseChartIndex, resolveChartVersion } from './chart-version.js';
import { parseHelmOptions } from './helm-options.js';
import { escapeSetValue, helmTemplateArgs } from './helm-template-args.js';

describe('envsubst (Go os.Expand with Argo CD variables)', () => {
  const env = { ARGOCD_APP_NAME: 'shop', KUBE_VERSION: '1.32.0' };
  it.each([
    ['$ARGOCD_APP_NAME', 'shop'],
    ['${ARGOCD_APP_NAME}-x', 'shop-x'],
    ['values-$ARGOCD_APP_NAME.yaml', 'values-shop.yaml'],
    ['$UNKNOWN/a', '/a'],
    ['$$5', '$5'],
    ['cost $', 'cost $'],
    ['a$-b', 'ab'],
    ['a${}b', 'ab'],
    ['a${b', 'ab'],
    ['50% $.', '50% $.'],
    ['v${KUBE_VERSION}', 'v1.32.0'],
  ])('%s → %s', (input, want) => expect(envsubst(input, env)).toBe(want));
});

describe('helm template arguments', () => {
  it("follow Argo CD's order and escape commas in --set values", () => {
    const args = helmTemplateArgs({
      chart: '/c',
      releaseName: 'r',
      namespace: 'ns',
      capabilities: { kubeVersion: '1.32.0', apiVersions: ['a/v1'] },
      valueFiles: ['/c/v.yaml'],
      inlineValuesFile: '/t/inline.yaml',
      parameters: [
        { name: 'b', value: 'x,y', forceString: false },
        { name: 'a', value: '{1,2}', forceString: false },
        { name: 's', value: '1', forceString: true },
        { name: 'b', value: 'last', forceString: false },
      ],
      fileParameters: [{ name: 'f', path: '/c/f.txt' }],
      skipCrds: false,
      skipSchemaValidation: true,
      skipTests: false,
    });
    expect(args).toEqual([
      'template',
      'r',
      '/c',
      '--namespace',
      'ns',
      '--kube-version',
      '1.32.0',
      '--set',
      'a={1,2}',
      '--set',
      'b=last',
      '--set-string',
      's=1',
      '--set-file',
      'f=/c/f.txt',
      '--values',
      '/c/v.yaml',
      '--values',
      '/t/inline.yaml',
      '--api-versions',
      'a/v1',
      '--include-crds',
      '--skip-schema-validation',
    ]);
    expect(escapeSetValue('a\\,b,c')).toBe('a\\,b\\,c');
  });
});

describe('source.helm', () => {
  it('valuesObject wins over values, as in Argo CD', () => {
    expect(parseHelmOptions({ values: 'a: 1', valuesObject: { a: 2 } }).values).toBe('{"a":2}');
  });
  it('refuses unknown fields and wrong types by path', () => {
    expect(() => parseHelmOptions({ valueFile: [] })).toThrow(
      /^spec\.source\.helm\.valueFile: is not supported/,
    );
    expect(() => parseHelmOptions({ parameters: [{ name: 'a', value: {} }] })).toThrow(
      /^spec\.source\.helm\.parameters\[0\]\.value: must be a string$/,
    );
    expect(() => parseHelmOptions({ version: 'v2' })).toThrow(/^spec\.source\.helm\.version:/);
  });
});

describe('chart versions', () => {
  const index = parseChartIndex(
    `apiVersion: v1
entries:
  web:
    - {version: 1.2.0, urls: [web-1.2.0.tgz]}
    - {version: 1.10.0, urls: [https://cdn.example/web-1.10.0.tgz]}
    - {version: 2.0.0-rc.1, urls: [web-2.0.0-rc.1.tgz]}
    - {version: 1.9.3, urls: [charts/web-1.9.3.tgz]}
`,
    'https://charts.example/stable/',
  );
  const pick = (range: string) =>
    resolveChartVersion(index, 'web', range, 'https://charts.example/stable').version;
  it('resolves exact versions, ranges (with commas), x-ranges and pre-releases as Helm does', () => {
    expect(pick('1.2.0')).toBe('1.2.0');
    expect(pick('>=1.0.0, <1.10.0')).toBe('1.9.3');
    expect(pick('1.x')).toBe('1.10.0');
    expect(pick('~1.9')).toBe('1.9.3');
    expect(pick('*')).toBe('1.10.0');
    expect(pick('')).toBe('1.10.0');
    expect(pick('>=2.0.0-0')).toBe('2.0.0-rc.1');
  });
  it('makes package URLs absolute against the repository', () => {
    const urls = (index.get('web') ?? []).map((v) => v.url);
    expect(urls).toEqual([
      'https://charts.example/stable/web-1.2.0.tgz',
      'https://cdn.example/web-1.10.0.tgz',
      'https://charts.example/stable/web-2.0.0-rc.1.tgz',
      'https://charts.example/stable/charts/web-1.9.3.tgz',
    ]);
  });
  it('names what is missing', () => {
    expect(() => pick('3.0.0')).toThrow('chart "web" has no version 3.0.0 (latest: 1.10.0)');
    expect(() => pick('>=5')).toThrow('chart "web" has no version matching ">=5" (latest: 1.10.0)');
  });
});
