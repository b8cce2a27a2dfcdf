import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { bundleDigest } from '@flotilla/manifests';
import { parseManifestFiles } from '@flotilla/manifests';
import {
  SopsError,
  decryptSopsObject,
  isSopsEncrypted,
  parseAgeIdentities,
  preserveSopsKeyOrder,
} from './index.js';

const fixture = (name: string): string =>
  readFileSync(new URL(`./testdata/${name}`, import.meta.url), 'utf8');

/** What PostgreSQL jsonb hands back: every map's keys sorted by length, then bytes. */
function throughJsonb(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(throughJsonb);
  if (typeof node !== 'object' || node === null) return node;
  const keys = Object.keys(node).sort((a, b) => a.length - b.length || (a < b ? -1 : a > b ? 1 : 0));
  return Object.fromEntries(keys.map((k) => [k, throughJsonb((node as Record<string, unknown>)[k])]));
}

describe('a SOPS Secret from repository file to agent', () => {
  const files = [
    { path: 'secret.yaml', content: fixture('flux-global-secret.sops.yaml') },
    { path: 'cm.yaml', content: 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: plain}\ndata: {a: b}\n' },
  ];

  it('the hub keeps ciphertext only; the agent decrypts after the bundle crossed a key-sorting store', async () => {
    const bundle = parseManifestFiles(files).map(preserveSopsKeyOrder);
    const stored = JSON.stringify(throughJsonb(bundle));
    expect(stored).not.toContain('global-value');

    const fetched = JSON.parse(stored) as Record<string, unknown>[];
    expect(bundleDigest(fetched as never)).toBe(bundleDigest(bundle));
    const keys = parseAgeIdentities(fixture('flux-global.agekey'));
    const applied: Record<string, unknown>[] = [];
    for (const m of fetched)
      applied.push(isSopsEncrypted(m) ? await decryptSopsObject(m, { ageIdentities: keys }) : m);
    expect(applied.map((m) => m['kind'])).toEqual(['ConfigMap', 'Secret']);
    expect(applied[1]).toEqual({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'global-age-secret', namespace: 'default' },
      type: 'Opaque',
      stringData: { key: 'global-value' },
    });
  });

  it('without the recorded order the MAC cannot be checked, and the agent refuses rather than guesses', async () => {
    const fetched = throughJsonb(parseManifestFiles(files)) as Record<string, unknown>[];
    const secret = fetched.find(isSopsEncrypted);
    const keys = parseAgeIdentities(fixture('flux-global.agekey'));
    await expect(decryptSopsObject(secret, { ageIdentities: keys })).rejects.toThrow(SopsError);
  });
});
