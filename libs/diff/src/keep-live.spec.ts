import { describe, expect, it } from 'vitest';
import { DiffError } from './diff-error.js';
import { keepLiveIgnoredFields } from './keep-live.js';

const desired = {
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: 'web', namespace: 'shop' },
  spec: {
    replicas: 2,
    template: { spec: { containers: [{ name: 'web', image: 'nginx:1.27' }] } },
  },
};
const live = {
  ...structuredClone(desired),
  spec: {
    replicas: 7,
    paused: true,
    template: {
      spec: {
        containers: [
          { name: 'web', image: 'nginx:1.28' },
          { name: 'mesh', image: 'proxy:1' },
        ],
      },
    },
  },
};

describe('keepLiveIgnoredFields', () => {
  it('takes the live value of fields a jsonPointer rule matches, and leaves the input alone', () => {
    const out = keepLiveIgnoredFields(desired, live, [
      { group: 'apps', kind: 'Deployment', jsonPointers: ['/spec/replicas', '/spec/paused'] },
    ]);
    expect(out.spec.replicas).toBe(7);
    expect((out.spec as Record<string, unknown>)['paused']).toBe(true);
    expect(out.spec.template).toEqual(desired.spec.template);
    expect(desired.spec.replicas).toBe(2);
  });

  it('takes the live value of what a jq expression selects, inside arrays too', () => {
    const out = keepLiveIgnoredFields(desired, live, [
      {
        group: 'apps',
        kind: 'Deployment',
        jqPathExpressions: ['.spec.template.spec.containers[] | select(.name == "web") | .image'],
      },
    ]);
    expect(out.spec.template.spec.containers).toEqual([{ name: 'web', image: 'nginx:1.28' }]);
    expect(out.spec.replicas).toBe(2);
  });

  it('keeps the desired value when the field is not live, and ignores rules for other objects', () => {
    const noReplicas = { ...live, spec: { ...live.spec, replicas: undefined } };
    delete (noReplicas.spec as Record<string, unknown>)['replicas'];
    const out = keepLiveIgnoredFields(desired, noReplicas, [
      { group: 'apps', kind: 'Deployment', jsonPointers: ['/spec/replicas'] },
      { group: 'apps', kind: 'Deployment', name: 'other', jsonPointers: ['/spec/paused'] },
    ]);
    expect(out).toEqual(desired);
  });

  it('refuses a rule that can never work, naming its field', () => {
    expect(() =>
      keepLiveIgnoredFields(desired, live, [{ kind: 'Deployment', jsonPointers: ['spec/replicas'] }]),
    ).toThrow(DiffError);
  });
});
