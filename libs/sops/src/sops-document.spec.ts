import { readFileSync } from 'node:fs';
import { generateX25519Identity, identityToRecipient } from 'age-encryption';
import { parse } from 'yaml';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  SopsError,
  decryptSopsObject,
  encryptSopsObject,
  isSopsEncrypted,
  parseAgeIdentities,
  preserveSopsKeyOrder,
} from './index.js';

const fixture = (name: string): string =>
  readFileSync(new URL(`./testdata/${name}`, import.meta.url), 'utf8');
const load = (name: string): Record<string, unknown> => parse(fixture(name)) as Record<string, unknown>;
const fluxKeys = parseAgeIdentities(fixture('flux-global.agekey'));
const ropsKeys = parseAgeIdentities(fixture('rops.agekey'));

async function sopsError(promise: Promise<unknown>): Promise<SopsError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(SopsError);
  return err as SopsError;
}

/** Rebuilds every map with its keys sorted the way PostgreSQL jsonb stores them (length, then bytes). */
function jsonbOrder(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(jsonbOrder);
  if (typeof node !== 'object' || node === null) return node;
  const keys = Object.keys(node).sort((a, b) => a.length - b.length || (a < b ? -1 : a > b ? 1 : 0));
  return Object.fromEntries(keys.map((k) => [k, jsonbOrder((node as Record<string, unknown>)[k])]));
}

describe('a real SOPS file (Flux test fixture, sops 3.10.2, age)', () => {
  it('decrypts to the known plaintext, verifies the MAC and drops the sops block', async () => {
    const secret = load('flux-global-secret.sops.yaml');
    expect(isSopsEncrypted(secret)).toBe(true);
    const plain = await decryptSopsObject(secret, { ageIdentities: fluxKeys });
    expect(plain).toEqual({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'global-age-secret', namespace: 'default' },
      type: 'Opaque',
      stringData: { key: 'global-value' },
    });
    expect(Object.keys(plain)).toEqual(['apiVersion', 'kind', 'metadata', 'type', 'stringData']);
  });

  it('refuses a tampered ciphertext with mac-mismatch at its path', async () => {
    const secret = load('flux-global-secret.sops.yaml');
    const data = secret['stringData'] as Record<string, string>;
    data['key'] = (data['key'] ?? '').replace('data:5d9W', 'data:5d9X');
    const err = await sopsError(decryptSopsObject(secret, { ageIdentities: fluxKeys }));
    expect(err.code).toBe('mac-mismatch');
    expect(err.path).toBe('stringData.key');
  });

  it('refuses a changed plaintext field (covered by the MAC though not encrypted)', async () => {
    const secret = load('flux-global-secret.sops.yaml');
    (secret['metadata'] as Record<string, string>)['namespace'] = 'kube-system';
    const err = await sopsError(decryptSopsObject(secret, { ageIdentities: fluxKeys }));
    expect(err.code).toBe('mac-mismatch');
    expect(err.path).toBe('sops.mac');
  });

  it('refuses an edited lastmodified (the MAC is bound to it)', async () => {
    const secret = load('flux-global-secret.sops.yaml');
    (secret['sops'] as Record<string, string>)['lastmodified'] = '2025-07-06T17:19:52Z';
    const err = await sopsError(decryptSopsObject(secret, { ageIdentities: fluxKeys }));
    expect(err.code).toBe('mac-mismatch');
    expect(err.path).toBe('sops.mac');
  });

  it('names the file’s recipients when the agent holds another key', async () => {
    const other = await generateX25519Identity();
    const err = await sopsError(
      decryptSopsObject(load('flux-global-secret.sops.yaml'), { ageIdentities: [other] }),
    );
    expect(err.code).toBe('no-matching-key');
    expect(err.path).toBe('sops.age');
    expect(err.message).toContain('age1henwn645drkd3fa34t27t2w2x0nsgw3w4h62gmg5x5xflyjpy38s5cncph');
    expect(err.message).toContain(await identityToRecipient(other));
  });

  it('says so when no identity is configured at all', async () => {
    const err = await sopsError(
      decryptSopsObject(load('flux-global-secret.sops.yaml'), { ageIdentities: [] }),
    );
    expect(err.code).toBe('no-matching-key');
    expect(err.message).toContain('no age identity is configured');
  });

  it('survives a store that reorders keys when the order was recorded at parse time', async () => {
    const reordered = jsonbOrder(load('flux-global-secret.sops.yaml'));
    const lost = await sopsError(decryptSopsObject(reordered, { ageIdentities: fluxKeys }));
    expect(lost.code).toBe('mac-mismatch');

    const kept = jsonbOrder(
      JSON.parse(JSON.stringify(preserveSopsKeyOrder(load('flux-global-secret.sops.yaml')))),
    );
    const plain = await decryptSopsObject(kept, { ageIdentities: fluxKeys });
    expect(Object.keys(plain)).toEqual(['apiVersion', 'kind', 'metadata', 'type', 'stringData']);
    expect(plain['stringData']).toEqual({ key: 'global-value' });
  });
});

describe('SOPS reference files for each selection rule (rops parity fixtures, age)', () => {
  it.each([
    ['rops-mac-only-encrypted', 'mac_only_encrypted with unencrypted_suffix'],
    ['rops-unencrypted-regex', 'unencrypted_regex'],
  ])('%s (%s) decrypts to the expected plaintext', async (name) => {
    const plain = await decryptSopsObject(load(`${name}.sops.yaml`), { ageIdentities: ropsKeys });
    expect(plain).toEqual(load(`${name}.plain.yaml`));
  });

  it('encrypted_suffix: only values under a key ending in the suffix were encrypted', async () => {
    const plain = await decryptSopsObject(load('rops-encrypted-suffix.sops.yaml'), {
      ageIdentities: ropsKeys,
    });
    expect(plain).toEqual({
      a: {
        '1_encrypted': { a: 'xxx', b: 'xxx' },
        '2_plain': 'aaa',
        '3_nested_encrypted': { a: { i: 'xxx' }, b: { ii: 'xxx' } },
      },
      b_encrypted: 'xxx',
    });
  });

  it('keeps empty strings and nulls as they are (never encrypted)', async () => {
    const plain = await decryptSopsObject(load('rops-empty-value.sops.yaml'), { ageIdentities: ropsKeys });
    expect(plain).toEqual({ string_value: '', null_value: null, array_value: ['', null] });
  });

  it('with mac_only_encrypted, a plain field may change but an encrypted one may not', async () => {
    const edited = load('rops-mac-only-encrypted.sops.yaml');
    edited['d_unencrypted'] = 'bbb';
    expect((await decryptSopsObject(edited, { ageIdentities: ropsKeys }))['d_unencrypted']).toBe('bbb');

    const swapped = load('rops-mac-only-encrypted.sops.yaml');
    [swapped['a_encrypted'], swapped['c_encrypted']] = [swapped['c_encrypted'], swapped['a_encrypted']];
    const err = await sopsError(decryptSopsObject(swapped, { ageIdentities: ropsKeys }));
    expect(err.code).toBe('mac-mismatch');
    expect(err.path).toBe('a_encrypted');
  });

  it('without mac_only_encrypted, a changed unencrypted value inside a list fails the MAC', async () => {
    const edited = load('rops-unencrypted-regex.sops.yaml');
    ((edited['a'] as Record<string, Record<string, number[]>>)['unencrypted_1'] ?? {})['c']?.splice(
      1,
      1,
      457,
    );
    const err = await sopsError(decryptSopsObject(edited, { ageIdentities: ropsKeys }));
    expect(err.code).toBe('mac-mismatch');
    expect(err.path).toBe('sops.mac');
  });
});

describe('encryptSopsObject → decryptSopsObject', () => {
  let identity: string;
  let recipient: string;
  beforeAll(async () => {
    identity = await generateX25519Identity();
    recipient = await identityToRecipient(identity);
  });

  const document = (): Record<string, unknown> => ({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'db', labels: { tier: 'backend' } },
    stringData: {
      password: 'pä55:wörd',
      port: 5432,
      ratio: 0.75,
      huge: 1e21,
      enabled: true,
      disabled: false,
      empty: '',
      nothing: null,
      hosts: ['a.example', 'b.example'],
      nested: { deeper: [{ token: 't-1' }, { token: 't-2', weight: -2.5 }] },
    },
  });

  it('round-trips nested maps, lists and every scalar type with encrypted_regex', async () => {
    const enc = await encryptSopsObject(document(), {
      recipients: [recipient],
      encryptedRegex: '^(data|stringData)$',
    });
    const data = enc['stringData'] as Record<string, unknown>;
    expect(data['password']).toMatch(/^ENC\[AES256_GCM,data:.+,iv:.+,tag:.+,type:str\]$/);
    expect(data['port']).toMatch(/type:int\]$/);
    expect(data['ratio']).toMatch(/type:float\]$/);
    expect(data['enabled']).toMatch(/type:bool\]$/);
    expect(data['empty']).toBe('');
    expect(data['nothing']).toBeNull();
    expect((data['hosts'] as string[])[0]).toMatch(/^ENC\[/);
    expect(enc['metadata']).toEqual({ name: 'db', labels: { tier: 'backend' } });
    expect(enc['sops']).toMatchObject({
      age: [{ recipient, enc: expect.stringMatching(/^-----BEGIN AGE ENCRYPTED FILE-----/) as unknown }],
      encrypted_regex: '^(data|stringData)$',
      version: '3.9.0',
    });
    expect(JSON.stringify(enc)).not.toContain('pä55');

    expect(await decryptSopsObject(enc, { ageIdentities: [identity] })).toEqual(document());
  });

  it('round-trips bytes values', async () => {
    const enc = await encryptSopsObject({ blob: new Uint8Array([0, 255, 7]) }, { recipients: [recipient] });
    expect(enc['blob']).toMatch(/type:bytes\]$/);
    const plain = await decryptSopsObject(enc, { ageIdentities: [identity] });
    expect(plain['blob']).toEqual(new Uint8Array([0, 255, 7]));
  });

  it('unencrypted_suffix leaves every value under a matching key in clear and still MACs it', async () => {
    const input = { user: 'app', config_unencrypted: { level: 'debug', ports: [80, 443] }, token: 's3cret' };
    const enc = await encryptSopsObject(input, {
      recipients: [recipient],
      unencryptedSuffix: '_unencrypted',
    });
    expect(enc['config_unencrypted']).toEqual({ level: 'debug', ports: [80, 443] });
    expect(enc['user']).toMatch(/^ENC\[/);
    expect(enc['token']).toMatch(/^ENC\[/);
    expect((enc['sops'] as Record<string, unknown>)['unencrypted_suffix']).toBe('_unencrypted');
    expect(await decryptSopsObject(enc, { ageIdentities: [identity] })).toEqual(input);

    (enc['config_unencrypted'] as Record<string, unknown>)['level'] = 'trace';
    expect((await sopsError(decryptSopsObject(enc, { ageIdentities: [identity] }))).code).toBe(
      'mac-mismatch',
    );
  });

  it('the default rule (no option) is unencrypted_suffix "_unencrypted", as in sops', async () => {
    const enc = await encryptSopsObject({ a: 'x', b_unencrypted: 'y' }, { recipients: [recipient] });
    expect(enc['b_unencrypted']).toBe('y');
    expect((enc['sops'] as Record<string, unknown>)['unencrypted_suffix']).toBe('_unencrypted');
  });

  it('any one of several recipients can decrypt', async () => {
    const second = await generateX25519Identity();
    const enc = await encryptSopsObject(
      { k: 'v' },
      { recipients: [recipient, await identityToRecipient(second)] },
    );
    expect(await decryptSopsObject(enc, { ageIdentities: [second] })).toEqual({ k: 'v' });
  });

  it('moving a ciphertext to another key fails (the path is authenticated)', async () => {
    const enc = await encryptSopsObject({ a: 'one', b: 'two' }, { recipients: [recipient] });
    [enc['a'], enc['b']] = [enc['b'], enc['a']];
    const err = await sopsError(decryptSopsObject(enc, { ageIdentities: [identity] }));
    expect(err.code).toBe('mac-mismatch');
    expect(err.path).toBe('a');
  });

  it('returns nothing and leaves the input untouched when a late value is tampered', async () => {
    const enc = await encryptSopsObject(document(), {
      recipients: [recipient],
      encryptedRegex: '^stringData$',
    });
    const nested = (enc['stringData'] as Record<string, { deeper: { token: string }[] }>)['nested'];
    const last = nested?.deeper[1];
    if (!last) throw new Error('fixture shape');
    last.token = last.token.replace(/data:[^,]{2}/, 'data:AA');
    const before = JSON.stringify(enc);
    let result: unknown = 'unset';
    const err = await sopsError(
      decryptSopsObject(enc, { ageIdentities: [identity] }).then((r) => {
        result = r;
      }),
    );
    expect(err.code).toBe('mac-mismatch');
    expect(err.path).toBe('stringData.nested.deeper[1].token');
    expect(err.message).not.toContain('t-2');
    expect(result).toBe('unset');
    expect(JSON.stringify(enc)).toBe(before);
  });

  it('refuses plaintext where the rule expects ciphertext, and malformed ENC values', async () => {
    const enc = await encryptSopsObject({ a: 'one', b: 'two' }, { recipients: [recipient] });
    const plainInstead = { ...enc, a: 'one' };
    const e1 = await sopsError(decryptSopsObject(plainInstead, { ageIdentities: [identity] }));
    expect(e1.code).toBe('malformed-ciphertext');
    expect(e1.path).toBe('a');

    const garbled = { ...enc, b: 'ENC[AES256_GCM,data:@@,iv:x,tag:y,type:str]' };
    const e2 = await sopsError(decryptSopsObject(garbled, { ageIdentities: [identity] }));
    expect(e2.code).toBe('malformed-ciphertext');
    expect(e2.path).toBe('b');

    const badArmor = { ...enc, sops: { ...(enc['sops'] as object), age: [{ recipient, enc: 'not armor' }] } };
    const e3 = await sopsError(decryptSopsObject(badArmor, { ageIdentities: [identity] }));
    expect(e3.code).toBe('malformed-ciphertext');
    expect(e3.path).toBe('sops.age[0].enc');
  });
});

describe('metadata and keys', () => {
  it('refuses files encrypted only for PGP or KMS with a clear message', async () => {
    const secret = load('flux-global-secret.sops.yaml');
    secret['sops'] = {
      ...(secret['sops'] as object),
      age: [],
      pgp: [{ fp: 'FBC7B9E2A4F9289AC0C1D4843D16CEE4A27381B4', enc: '-----BEGIN PGP MESSAGE-----' }],
      kms: [{ arn: 'arn:aws:kms:eu-west-1:1:key/x', enc: 'x' }],
    };
    const err = await sopsError(decryptSopsObject(secret, { ageIdentities: fluxKeys }));
    expect(err.code).toBe('unsupported-key-type');
    expect(err.message).toContain('pgp, kms only');
    expect(err.message).toContain('age');
  });

  it('refuses Shamir key groups', async () => {
    const secret = load('flux-global-secret.sops.yaml');
    secret['sops'] = { ...(secret['sops'] as object), key_groups: [{ age: [] }], shamir_threshold: 2 };
    const err = await sopsError(decryptSopsObject(secret, { ageIdentities: fluxKeys }));
    expect(err.code).toBe('unsupported-key-type');
    expect(err.path).toBe('sops.key_groups');
  });

  it('refuses a sops block without a mac, naming the field', async () => {
    const secret = load('flux-global-secret.sops.yaml');
    delete (secret['sops'] as Record<string, unknown>)['mac'];
    const err = await sopsError(decryptSopsObject(secret, { ageIdentities: fluxKeys }));
    expect(err.code).toBe('invalid-metadata');
    expect(err.path).toBe('sops.mac');
  });

  it('refuses an object that is not encrypted', async () => {
    expect(isSopsEncrypted({ kind: 'Secret', stringData: { a: 'b' } })).toBe(false);
    const err = await sopsError(decryptSopsObject({ kind: 'Secret' }, { ageIdentities: fluxKeys }));
    expect(err.code).toBe('not-encrypted');
  });

  it('reads key files: comments and blank lines skipped, other lines refused with their line number', () => {
    expect(fluxKeys).toEqual(['AGE-SECRET-KEY-10U7MAELH09KZU63F65P2TYLN7TQM5X6GSDDCQ4YMUGDS3DS6XZMSTYY2PN']);
    expect(parseAgeIdentities(`${fixture('flux-global.agekey')}\n\n${fixture('rops.agekey')}`)).toHaveLength(
      2,
    );
    expect(() => parseAgeIdentities('# c\nage1abc\n')).toThrow(
      expect.objectContaining({ code: 'invalid-identity', path: 'line 2' }),
    );
  });

  it('refuses an identity that does not parse', async () => {
    const err = await sopsError(
      decryptSopsObject(load('flux-global-secret.sops.yaml'), { ageIdentities: ['AGE-SECRET-KEY-1NOPE'] }),
    );
    expect(err.code).toBe('invalid-identity');
    expect(err.path).toBe('ageIdentities[0]');
  });
});
