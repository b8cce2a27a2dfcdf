import { describe, expect, it } from 'vitest';
import { type FleetObject } from '@flotilla/fleet-config';
import { planFleet, type ManagedEntry } from './fleet-plan.js';
import { parseFleetRepositories } from './fleet-setting.js';

const project = (name: string, file: string, description = ''): FleetObject =>
  ({
    kind: 'Project',
    name,
    file,
    document: 0,
    line: 1,
    object: {
      apiVersion: 'flotilla.dev/v1alpha1',
      kind: 'Project',
      metadata: { name },
      spec: { description, sourceRepos: ['*'] },
    },
  }) as FleetObject;
const managed = (o: FleetObject, source = 's1'): ManagedEntry => ({
  kind: o.kind,
  name: o.name,
  fleetSourceId: source,
  file: o.file,
  object: o.object,
});

describe('planFleet', () => {
  const a = project('a', 'projects.yaml');
  const b = project('b', 'projects.yaml');
  it.each<[string, FleetObject[], ManagedEntry[], Record<string, string[]>]>([
    ['a first commit creates everything', [a, b], [], { create: ['a', 'b'] }],
    ['the same commit again changes nothing', [a, b], [managed(a), managed(b)], { unchanged: ['a', 'b'] }],
    [
      'an edited object is updated',
      [project('a', 'projects.yaml', 'x'), b],
      [managed(a), managed(b)],
      { update: ['a'], unchanged: ['b'] },
    ],
    [
      'a moved file is an update (the refusal names the new file)',
      [project('a', 'a.yaml'), b],
      [managed(a), managed(b)],
      { update: ['a'], unchanged: ['b'] },
    ],
    ['a removed object is deleted', [a], [managed(a), managed(b)], { unchanged: ['a'], delete: ['b'] }],
    [
      "another source's object is a conflict, never taken over",
      [a],
      [managed(a, 's2')],
      { conflicts: ['a'] },
    ],
    ["another source's objects are never deleted", [], [managed(a, 's2')], {}],
  ])('%s', (_what, desired, current, expected) => {
    const plan = planFleet('s1', desired, current);
    const names = {
      create: plan.create.map((o) => o.name),
      update: plan.update.map((o) => o.name),
      unchanged: plan.unchanged.map((o) => o.name),
      delete: plan.delete.map((o) => o.name),
      conflicts: plan.conflicts.map((c) => c.object.name),
    };
    expect(names).toEqual({ create: [], update: [], unchanged: [], delete: [], conflicts: [], ...expected });
  });
});

describe('parseFleetRepositories (FLEET_REPOSITORIES)', () => {
  it.each([
    ['', []],
    ['https://git/fleet.git', [{ repoUrl: 'https://git/fleet.git', revision: 'HEAD', path: '' }]],
    ['https://git/fleet.git#main', [{ repoUrl: 'https://git/fleet.git', revision: 'main', path: '' }]],
    [
      'https://git/fleet.git#main:clusters/prod/, file:///srv/other#v1',
      [
        { repoUrl: 'https://git/fleet.git', revision: 'main', path: 'clusters/prod' },
        { repoUrl: 'file:///srv/other', revision: 'v1', path: '' },
      ],
    ],
    ['https://git/fleet.git#:fleet', [{ repoUrl: 'https://git/fleet.git', revision: 'HEAD', path: 'fleet' }]],
  ])('%j', (text, expected) => {
    expect(parseFleetRepositories(text)).toEqual(expected);
  });

  it('refuses a path that leaves the repository', () => {
    expect(() => parseFleetRepositories('https://git/f#main:../x')).toThrow(
      "path '../x' leaves the repository ('..')",
    );
  });
});
