import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { type KubeObject } from '@flotilla/contract';
import { blameManager, managersOf } from './field-managers.js';

const live = parse(
  readFileSync(new URL('../testdata/contested-deployment.yaml', import.meta.url), 'utf8'),
) as KubeObject;

describe('managersOf', () => {
  it('names the other manager that owns a scalar field', () => {
    expect(managersOf(live, '/spec/replicas')).toEqual(['kubectl-edit']);
    expect(managersOf(live, '/metadata/labels/team')).toEqual(['kubectl-edit']);
  });

  it('matches list elements by their key fields, using the live element at that index', () => {
    // containers[1] is the "web" container in the live object.
    expect(managersOf(live, '/spec/template/spec/containers/1/image')).toEqual(['kubectl-set']);
    expect(managersOf(live, '/spec/template/spec/containers/0/image')).toEqual([]);
  });

  it('treats an atomic field as owning everything below it', () => {
    expect(managersOf(live, '/spec/selector/matchLabels/app')).toEqual([]);
  });

  it('never blames flotilla itself nor status writers', () => {
    expect(managersOf(live, '/metadata/labels/app')).toEqual([]);
    expect(managersOf(live, '/status/replicas')).toEqual([]);
  });
});

describe('blameManager', () => {
  it('picks the manager owning most of the drifted paths', () => {
    expect(
      blameManager(live, [
        '/spec/replicas',
        '/metadata/labels/team',
        '/spec/template/spec/containers/1/image',
      ]),
    ).toBe('kubectl-edit');
    expect(blameManager(live, ['/metadata/labels/app'])).toBeUndefined();
  });
});
