import { describe, expect, it } from 'vitest';
import { DiffError } from './diff-error.js';
import { compileJqPaths } from './jq-path-expression.js';

const deployment = {
  metadata: { annotations: { 'example.com/build': '42', team: 'shop' } },
  spec: {
    template: {
      spec: {
        containers: [
          { name: 'app', image: 'shop:2', env: [{ name: 'A', value: '1' }] },
          { name: 'cache', image: 'redis:7' },
        ],
      },
    },
  },
};

describe('compileJqPaths', () => {
  it.each([
    [
      '.spec.template.spec.containers[] | select(.name == "cache") | .image',
      [['spec', 'template', 'spec', 'containers', 1, 'image']],
    ],
    ['.metadata.annotations."example.com/build"', [['metadata', 'annotations', 'example.com/build']]],
    ['.metadata.annotations["team"]', [['metadata', 'annotations', 'team']]],
    ['.spec.template.spec.initContainers[]?', []],
    [
      '.spec.template.spec.containers[].env[]? | select(.name == "A") | .value',
      [['spec', 'template', 'spec', 'containers', 0, 'env', 0, 'value']],
    ],
    [
      '.spec.template.spec.containers[0].image, .spec.replicas',
      [
        ['spec', 'template', 'spec', 'containers', 0, 'image'],
        ['spec', 'replicas'],
      ],
    ],
  ])('%s', (expression, paths) => {
    expect(compileJqPaths(expression, 'rule')(deployment)).toEqual(paths);
  });

  it('designates nothing when the expression fails on this object', () => {
    expect(compileJqPaths('.metadata.annotations.team[]', 'rule')(deployment)).toEqual([]);
  });

  it('rejects an expression that is not jq, naming where it came from', () => {
    let caught: unknown;
    try {
      compileJqPaths('.spec | select(.name ==', 'ignoreRules[2].jqPathExpressions[0]');
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(DiffError);
    expect((caught as DiffError).code).toBe('invalid-ignore-rule');
    expect((caught as DiffError).path).toBe('ignoreRules[2].jqPathExpressions[0]');
    expect((caught as DiffError).message).toContain("invalid jq path expression '.spec | select(.name =='");
  });
});
