import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { diffLabel, diffObjects, renderUnifiedDiff, syncedObject } from './index.js';

/**
 * One directory per case under unified-testdata/: desired.yaml, live.yaml (absent: the cluster does
 * not have the object) and expected.diff, the exact text a person is shown — produced the way the
 * agent produces it: diffObjects, then syncedObject, then renderUnifiedDiff.
 */
const TESTDATA = join(import.meta.dirname, 'unified-testdata');

function load(dir: string, file: string): Record<string, unknown> | null {
  const path = join(TESTDATA, dir, file);
  return existsSync(path) ? (parse(readFileSync(path, 'utf8')) as Record<string, unknown>) : null;
}

function shownDiff(
  desired: Record<string, unknown>,
  live: Record<string, unknown> | null,
  maxBytes?: number,
) {
  const metadata = desired['metadata'] as { name: string; namespace?: string };
  const label = diffLabel({
    apiVersion: String(desired['apiVersion']),
    kind: String(desired['kind']),
    ...metadata,
  });
  if (!live) return renderUnifiedDiff({ live: null, desired, label, ...(maxBytes ? { maxBytes } : {}) });
  const { differences } = diffObjects(desired, live);
  return renderUnifiedDiff({
    live,
    desired: syncedObject(live, differences),
    label,
    ...(maxBytes ? { maxBytes } : {}),
  });
}

const cases = readdirSync(TESTDATA, { withFileTypes: true })
  .filter((d) => d.isDirectory())
  .map((d) => d.name)
  .sort();

describe('renderUnifiedDiff on unified-testdata fixtures', () => {
  it.each(cases)('%s', (name) => {
    const desired = load(name, 'desired.yaml');
    if (!desired) throw new Error(`${name}: desired.yaml is missing`);
    const expectedPath = join(TESTDATA, name, 'expected.diff');
    const expected = existsSync(expectedPath) ? readFileSync(expectedPath, 'utf8') : '';
    const result = shownDiff(desired, load(name, 'live.yaml'));
    expect(result.text).toBe(expected);
    expect(result.truncated).toBe(false);
  });

  it('never shows a Secret value, nor its length, and still tells which key changes', () => {
    const desired = load('secret-masked', 'desired.yaml');
    if (!desired) throw new Error('fixture missing');
    const { text } = shownDiff(desired, load('secret-masked', 'live.yaml'));
    for (const secret of ['hunter2', 'hunter3', 'aHVudGVyMg==', 'aHVudGVyMw==', 'YWRtaW4=', 'admin'])
      expect(text).not.toContain(secret);
    expect(text).toContain('-  password: ++++++++\n+  password: +++++++++\n');
    expect(text).toContain('   user: ++++++++\n');
  });
});

describe('renderUnifiedDiff limits', () => {
  const big = (n: number) => ({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'big', namespace: 'shop' },
    data: Object.fromEntries(
      Array.from({ length: n }, (_, i) => [`key-${i}`, `value ${i} ${'x'.repeat(40)}`]),
    ),
  });

  it('cuts a long diff at a line boundary within the limit and says what was left out', () => {
    const result = shownDiff(big(2000), null, 4096);
    expect(result.truncated).toBe(true);
    expect(new TextEncoder().encode(result.text).length).toBeLessThanOrEqual(4096);
    const lines = result.text.trimEnd().split('\n');
    expect(lines.at(-1)).toMatch(/^\.\.\. diff truncated at 4096 bytes: \d+ more line\(s\) not shown$/);
    // Whole lines only: what is kept is the start of the full diff, up to a line's end.
    const full = shownDiff(big(2000), null, 1024 * 1024);
    expect(full.truncated).toBe(false);
    expect(full.text.startsWith(`${lines.slice(0, -1).join('\n')}\n`)).toBe(true);
    const left = Number(/(\d+) more line/.exec(lines.at(-1) ?? '')?.[1]);
    expect(lines.length - 1 + left).toBe(full.text.trimEnd().split('\n').length);
  });

  it('is empty when a sync would change nothing that is shown', () => {
    const live = { ...big(3), status: { observed: 1 } };
    expect(renderUnifiedDiff({ live, desired: big(3), label: 'v1.ConfigMap.shop.big' })).toEqual({
      text: '',
      truncated: false,
    });
  });
});

describe('syncedObject', () => {
  const live = {
    metadata: { name: 'web', labels: { tier: 'web', keep: 'yes' } },
    spec: {
      containers: [
        { name: 'istio-proxy', image: 'proxy:1' },
        { name: 'web', image: 'web:1' },
        { name: 'old', image: 'old:1' },
      ],
    },
  };

  it('writes desired values at live paths, removes what the manifest dropped, appends new elements', () => {
    const out = syncedObject(live, [
      { path: '/metadata/labels/tier', desired: null, live: 'web' },
      { path: '/spec/containers/1/image', desired: 'web:2', live: 'web:1' },
      { path: '/spec/containers/2', desired: null, live: { name: 'old', image: 'old:1' } },
      { path: '/spec/containers/1', desired: { name: 'metrics', image: 'm:1' }, live: null },
      { path: '/spec/replicas', desired: 2, live: null },
    ]);
    expect(out).toEqual({
      metadata: { name: 'web', labels: { keep: 'yes' } },
      spec: {
        replicas: 2,
        containers: [
          { name: 'istio-proxy', image: 'proxy:1' },
          { name: 'web', image: 'web:2' },
          { name: 'metrics', image: 'm:1' },
        ],
      },
    });
    // The live object itself is left as it was.
    expect(live.spec.containers).toHaveLength(3);
    expect(live.metadata.labels.tier).toBe('web');
  });

  it('is the desired object whole when the cluster does not have it', () => {
    expect(syncedObject(null, [{ path: '', desired: { kind: 'Service' }, live: null }])).toEqual({
      kind: 'Service',
    });
  });
});
