import { describe, expect, it } from 'vitest';
import { endedBreakGlass, FightDetector } from './fight-detector.js';

describe('FightDetector', () => {
  const key = 'apps/Deployment/shop/web';

  it('calls a fight on the third identical round by the same manager', () => {
    const d = new FightDetector(3, 60_000);
    expect(d.record(key, ['/spec/replicas'], 'hpa', 0)).toBe(false);
    expect(d.record(key, ['/spec/replicas'], 'hpa', 1_000)).toBe(false);
    expect(d.record(key, ['/spec/replicas'], 'hpa', 2_000)).toBe(true);
  });

  it('starts counting again when the paths, the manager or the object change', () => {
    const d = new FightDetector(2, 60_000);
    expect(d.record(key, ['/spec/replicas'], 'hpa', 0)).toBe(false);
    expect(d.record(key, ['/spec/replicas'], 'kubectl-edit', 1)).toBe(false);
    expect(d.record(key, ['/spec/template/spec/containers/0/image'], 'kubectl-edit', 2)).toBe(false);
    expect(d.record('v1/ConfigMap/shop/c', ['/data/a'], 'kubectl-edit', 3)).toBe(false);
    expect(d.record(key, ['/spec/template/spec/containers/0/image'], 'kubectl-edit', 4)).toBe(true);
  });

  it('ignores rounds too far apart', () => {
    const d = new FightDetector(2, 60_000);
    expect(d.record(key, ['/spec/replicas'], 'hpa', 0)).toBe(false);
    expect(d.record(key, ['/spec/replicas'], 'hpa', 120_000)).toBe(false);
  });

  it('counts drift no manager can be blamed for as one unknown writer (#14 defect 10)', () => {
    const d = new FightDetector(3, 60_000);
    expect(d.record(key, [''], undefined, 1)).toBe(false);
    expect(d.record(key, [''], undefined, 2)).toBe(false);
    expect(d.record(key, [''], undefined, 3)).toBe(true);
    // A known manager is another writer: counting starts again.
    expect(d.record(key, [''], 'kubectl-edit', 4)).toBe(false);
  });

  it('forgets an object whose desired state changed', () => {
    const d = new FightDetector(2, 60_000);
    d.record(key, ['/spec/replicas'], 'hpa', 0);
    d.forget(key);
    expect(d.record(key, ['/spec/replicas'], 'hpa', 1)).toBe(false);
  });

  it('counts afresh after a break-glass ends, so reverting the manual change is not the fight-making round', () => {
    const d = new FightDetector(3, 60_000);
    const open = [{ id: 'bg-7' }];
    // Two heals of a person's `kubectl scale` before the incident...
    expect(d.record(key, ['/spec/replicas'], 'kubectl', 0)).toBe(false);
    expect(d.record(key, ['/spec/replicas'], 'kubectl', 1_000)).toBe(false);
    // ...the override pauses self-heal, the same manager scales by hand, the override is closed.
    if (endedBreakGlass(open, []).length > 0) d.clear();
    expect(d.record(key, ['/spec/replicas'], 'kubectl', 2_000)).toBe(false);
    // A real fight afterwards is still caught.
    expect(d.record(key, ['/spec/replicas'], 'kubectl', 3_000)).toBe(false);
    expect(d.record(key, ['/spec/replicas'], 'kubectl', 4_000)).toBe(true);
  });
});

describe('endedBreakGlass', () => {
  it('names the overrides the new assignment no longer carries', () => {
    expect(endedBreakGlass([{ id: 'a' }, { id: 'b' }], [{ id: 'b' }, { id: 'c' }])).toEqual(['a']);
  });

  it('is empty when overrides stay, are only added, or there never were any', () => {
    expect(endedBreakGlass([{ id: 'a' }], [{ id: 'a' }])).toEqual([]);
    expect(endedBreakGlass([], [{ id: 'a' }])).toEqual([]);
    expect(endedBreakGlass([], [])).toEqual([]);
  });
});
