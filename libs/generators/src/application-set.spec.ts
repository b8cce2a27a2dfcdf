import { describe, expect, it } from 'vitest';
import {
  applicationSetEnvelopeProblem,
  applicationSetNameProblem,
  applicationSetObjectSchema,
  parseApplicationSet,
} from './application-set.js';

const appSet = {
  apiVersion: 'flotilla.dev/v1alpha1',
  kind: 'ApplicationSet',
  metadata: { name: 'web' },
  spec: {
    project: 'payments',
    rolloutStrategy: 'canary-first',
    generators: [{ list: { elements: [{ cluster: 'eu-1' }] } }],
    template: { metadata: { name: '{{cluster}}-web' }, spec: {} },
  },
};

describe('the ApplicationSet document', () => {
  it('is an envelope with Flotilla fields around the spec the generators read', () => {
    expect(applicationSetObjectSchema.safeParse(appSet).success).toBe(true);
    expect(parseApplicationSet(appSet).spec.generators[0]?.kind).toBe('list');
    const badProject = { ...appSet, spec: { ...appSet.spec, project: 'Payments' } };
    expect(applicationSetObjectSchema.safeParse(badProject).error?.issues[0]?.path).toEqual([
      'spec',
      'project',
    ]);
  });

  it.each([
    [[appSet], '(root)'],
    [{ kind: 'ApplicationSet' }, 'apiVersion'],
    [{ apiVersion: 'argoproj.io/v1alpha1', kind: 'Application' }, 'kind'],
  ])('names where a submitted document is not an ApplicationSet (%j)', (doc, path) => {
    expect(applicationSetEnvelopeProblem(doc)?.path).toBe(path);
  });

  it('accepts an envelope that is one, whatever its spec', () => {
    expect(applicationSetEnvelopeProblem({ apiVersion: 'x', kind: 'ApplicationSet' })).toBeNull();
  });

  it.each([
    ['web', true],
    ['web.eu-1', true],
    ['', false],
    ['Web', false],
    ['-web', false],
    ['a'.repeat(254), false],
  ])('a submitted name %j is accepted: %s', (name, ok) => {
    expect(applicationSetNameProblem(name) === null).toBe(ok);
  });
});
