import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { type KubeObject } from '@flotilla/contract';
import { SyncWaveError, orderForApply, orderForPrune, syncWaveOf } from './apply-order.js';

const fixture = parse(
  readFileSync(new URL('../testdata/apply-order.yaml', import.meta.url), 'utf8'),
) as KubeObject[];
const names = (objs: KubeObject[]): string[] => objs.map((o) => `${o.kind}/${o.metadata.name}`);

describe('orderForApply', () => {
  it('puts namespaces and CRDs first, then orders by wave, kind and name', () => {
    expect(names(orderForApply(fixture))).toEqual([
      'Namespace/shop',
      // CRDs go first whatever their wave: instances in any wave need them.
      'CustomResourceDefinition/widgets.example.com',
      'ConfigMap/early-config',
      'ConfigMap/app-config',
      'Service/web',
      'Deployment/web',
      // Unknown kinds (custom resources) come after the known ones in the same wave.
      'Widget/gadget',
      'ConfigMap/late-config',
    ]);
  });

  it('is independent of input order', () => {
    expect(names(orderForApply([...fixture].reverse()))).toEqual(names(orderForApply(fixture)));
  });

  it('prunes in exactly the reverse order', () => {
    expect(names(orderForPrune(fixture))).toEqual(names(orderForApply(fixture)).reverse());
  });
});

describe('syncWaveOf', () => {
  const withWave = (annotations: Record<string, string>): KubeObject => ({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'c', namespace: 'ns', annotations },
  });

  it('defaults to 0, accepts negative waves and prefers the flotilla alias', () => {
    expect(syncWaveOf(withWave({}))).toBe(0);
    expect(syncWaveOf(withWave({ 'argocd.argoproj.io/sync-wave': '-3' }))).toBe(-3);
    expect(syncWaveOf(withWave({ 'flotilla.dev/sync-wave': '2', 'argocd.argoproj.io/sync-wave': '7' }))).toBe(
      2,
    );
  });

  it("reads Helm's hook weight only where no sync wave is set (any object, as Argo CD)", () => {
    expect(syncWaveOf(withWave({ 'helm.sh/hook-weight': '-4' }))).toBe(-4);
    expect(syncWaveOf(withWave({ 'helm.sh/hook-weight': '-4', 'argocd.argoproj.io/sync-wave': '1' }))).toBe(
      1,
    );
    expect(() => syncWaveOf(withWave({ 'helm.sh/hook-weight': 'first' }))).toThrow(
      'ConfigMap ns/c metadata.annotations["helm.sh/hook-weight"]: sync wave must be a whole number',
    );
  });

  it('refuses a wave that is not a whole number, naming the object and annotation', () => {
    let caught: unknown;
    try {
      orderForApply([withWave({ 'argocd.argoproj.io/sync-wave': 'soon' })]);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(SyncWaveError);
    const e = caught as SyncWaveError;
    expect(e.code).toBe('agent-bad-sync-wave');
    expect(e.path).toBe('ConfigMap ns/c metadata.annotations["argocd.argoproj.io/sync-wave"]');
    expect(e.value).toBe('soon');
  });
});
