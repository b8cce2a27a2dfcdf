import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { type KubeObject } from '@flotilla/contract';
import { diffObjects } from '@flotilla/diff';
import { blameManager } from './blame-manager.js';

const live = parse(
  readFileSync(new URL('../testdata/contested-deployment.yaml', import.meta.url), 'utf8'),
) as KubeObject;
const desired = parse(
  readFileSync(new URL('../testdata/desired-deployment.yaml', import.meta.url), 'utf8'),
) as KubeObject;

describe('blameManager', () => {
  it('names the manager owning most drifted values, as the differ reports them', () => {
    const diff = diffObjects(desired, live, { manager: 'flotilla' });
    expect(diff.differences.map((d) => [d.path, d.liveManagers])).toEqual([
      ['/spec/replicas', ['kubectl-edit']],
      ['/spec/template/spec/containers/1/image', ['kubectl-set']],
    ]);
    // One path each: the tie goes to the most recent writer.
    expect(blameManager(live, diff.differences)).toBe('kubectl-set');
    expect(blameManager(live, diff.differences.slice(0, 1))).toBe('kubectl-edit');
  });

  it('names nobody when no other manager owns the drifted values', () => {
    expect(
      blameManager(live, [{ path: '/metadata/labels/app', desired: 'web', live: 'api' }]),
    ).toBeUndefined();
  });
});
