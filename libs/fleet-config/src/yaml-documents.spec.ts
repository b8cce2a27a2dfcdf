import { describe, expect, it } from 'vitest';
import { formatPath, parsePath } from './field-path.js';
import { readYamlDocuments } from './yaml-documents.js';

describe('readYamlDocuments', () => {
  const text = [
    '# a comment before anything',
    'kind: A',
    '---',
    '# only a comment: an empty document, skipped but counted',
    '---',
    'kind: B',
    'spec:',
    '  steps:',
    '    - name: one',
    '    - name: two',
    '      bakeTime: 5m',
    '',
  ].join('\n');

  it('counts every document, skips empty ones, and gives each its first line', () => {
    const { documents, problems } = readYamlDocuments(text);
    expect(problems).toEqual([]);
    expect(documents.map((d) => [d.index, d.line, d.value])).toEqual([
      [0, 2, { kind: 'A' }],
      [2, 6, { kind: 'B', spec: { steps: [{ name: 'one' }, { name: 'two', bakeTime: '5m' }] } }],
    ]);
  });

  it('finds the line of a field, or of its closest existing parent', () => {
    const doc = readYamlDocuments(text).documents[1];
    expect(doc?.lineOf(['spec'])).toBe(7);
    expect(doc?.lineOf(['spec', 'steps', 1, 'bakeTime'])).toBe(11);
    expect(doc?.lineOf(['spec', 'steps', 1])).toBe(10);
    expect(doc?.lineOf(['spec', 'steps', 1, 'missing'])).toBe(10);
    expect(doc?.lineOf(['nowhere', 'at', 'all'])).toBe(6);
  });

  it('reports a broken document with its index and line, and keeps the others', () => {
    const { documents, problems } = readYamlDocuments('kind: A\n---\nkind: [B\n---\nkind: C\n');
    expect(documents.map((d) => d.value)).toEqual([{ kind: 'A' }, { kind: 'C' }]);
    expect(problems.map((p) => p.index)).toEqual([1]);
  });
});

describe('field paths', () => {
  it.each([
    [['spec', 'steps', 1, 'bakeTime'], 'spec.steps[1].bakeTime'],
    [['spec', 'labels', 'example.com/tier'], 'spec.labels["example.com/tier"]'],
    [[], '(root)'],
  ])('%j reads %s and back', (path, text) => {
    expect(formatPath(path)).toBe(text);
    expect(parsePath(text)).toEqual(path);
  });

  it('reads the paths other libs put in their errors', () => {
    expect(parsePath('[0].schedule')).toEqual([0, 'schedule']);
    expect(parsePath('spec.generators[1].matrix.generators[0]')).toEqual([
      'spec',
      'generators',
      1,
      'matrix',
      'generators',
      0,
    ]);
  });
});
