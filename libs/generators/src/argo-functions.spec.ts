import { describe, expect, it } from 'vitest';
import { ARGO_FUNCTIONS, sanitizeName, slugify } from './argo-functions.js';
import { TemplateEngine } from '@flotilla/gotemplate';

const engine = new TemplateEngine(ARGO_FUNCTIONS);
const render = (template: string, data: unknown): string => engine.parse(template).execute(data);

describe('Argo CD template functions', () => {
  it('normalize follows SanitizeName', () => {
    expect(sanitizeName('production_01/west')).toBe('production-01-west');
    expect(sanitizeName('-My.Cluster-')).toBe('my.cluster');
    expect(sanitizeName('x'.repeat(300))).toHaveLength(253);
  });

  it('slugify sanitizes, then truncates at a word boundary by default', () => {
    expect(slugify('Hello World.Example')).toBe('hello-world-example');
    expect(render('{{ slugify 10 false .n }}', { n: 'abcdefghij-klm' })).toBe('abcdefghij');
    expect(render('{{ slugify 12 true .n }}', { n: 'abcdef-ghijkl-mno' })).toBe('abcdef');
    expect(render('{{ slugify .n }}', { n: 'Engineering_Dev' })).toBe('engineering-dev');
  });

  it('toYaml matches sigs.k8s.io/yaml output without the final newline', () => {
    expect(
      render('{{ toYaml . | indent 2 }}', { foo: { bar: { bool: true, number: 2, str: 'Hello world' } } }),
    ).toBe('  foo:\n    bar:\n      bool: true\n      number: 2\n      str: Hello world');
    expect(render('{{ toYaml .l }}', { l: ['a', { b: 1 }] })).toBe('- a\n- b: 1');
  });

  it('fromYaml and fromYamlArray parse, and fail on the wrong shape', () => {
    expect(render('{{ get (fromYaml .value) "hello" }}', { value: 'hello: world' })).toBe('world');
    expect(
      render('{{ fromYamlArray .value | last }}', { value: '- hello world\n- bonjour tout le monde' }),
    ).toBe('bonjour tout le monde');
    expect(() => render('{{ get (fromYaml .value) "hello" }}', { value: 'non\n compliant\n yaml' })).toThrow(
      'template: :1:8: executing "" at <fromYaml .value>: error calling fromYaml: error unmarshaling JSON: while decoding JSON: json: cannot unmarshal string into Go value of type map[string]interface {}',
    );
    expect(() => render('{{ fromYamlArray .value | last }}', { value: 'a: b' })).toThrow(
      'cannot unmarshal object into Go value of type []interface {}',
    );
  });
});
