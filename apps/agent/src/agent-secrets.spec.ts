import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { generateX25519Identity, identityToRecipient } from 'age-encryption';
import { type KubeObject } from '@flotilla/contract';
import { encryptSopsObject } from '@flotilla/sops';
import { AgentHarness, pollOptions as poll } from './testing/agent-harness.js';

const namespace: KubeObject = { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'shop' } };
const secret: KubeObject = {
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: { name: 'db', namespace: 'shop' },
  type: 'Opaque',
  stringData: { password: 's3cret-value' },
};

/** SOPS-encrypted Secrets are decrypted by the agent only, with a key the hub never sees. */
describe('agent: SOPS-encrypted secrets', () => {
  let identity: string;
  let encrypted: KubeObject;
  let h: AgentHarness | undefined;

  beforeAll(async () => {
    identity = await generateX25519Identity();
    encrypted = (await encryptSopsObject(secret, {
      recipients: [await identityToRecipient(identity)],
      encryptedRegex: '^(data|stringData)$',
    })) as KubeObject;
    expect(JSON.stringify(encrypted)).not.toContain('s3cret-value');
  });

  afterEach(async () => {
    await h?.stop();
    h = undefined;
  });

  it('decrypts with its own age key and applies the plaintext Secret', async () => {
    h = await AgentHarness.start('sops-ok');
    const digest = h.hub.addBundle([namespace, encrypted]);
    h.hub.setAssignments([h.assignment({ bundleDigest: digest })]);
    await h.runAgent({ ageKey: identity });

    await expect.poll(() => h!.syncs()[0]?.outcome, poll).toBe('Succeeded');
    const live = (await h.read('Secret', 'db')) as { data?: Record<string, string> } | undefined;
    expect(Buffer.from(live?.data?.['password'] ?? '', 'base64').toString()).toBe('s3cret-value');
    expect(live && 'sops' in live).toBe(false);
  });

  it('without a key, reports the sync as failed and applies nothing', async () => {
    h = await AgentHarness.start('sops-nokey');
    const digest = h.hub.addBundle([namespace, encrypted]);
    h.hub.setAssignments([h.assignment({ bundleDigest: digest })]);
    await h.runAgent();

    await expect.poll(() => h!.syncs()[0]?.outcome, poll).toBe('Failed');
    expect(h.syncs()[0]?.message).toContain('cannot decrypt Secret shop/db');
    expect(h.syncs()[0]?.message).toContain('no age key');
    expect(await h.read('Secret', 'db')).toBeUndefined();
  });

  it('refuses a tampered value (MAC check) and applies nothing', async () => {
    h = await AgentHarness.start('sops-tampered');
    const tampered = structuredClone(encrypted) as KubeObject & { stringData: Record<string, string> };
    const value = tampered.stringData['password']!;
    // Flip one character of the base64 ciphertext inside ENC[AES256_GCM,data:…,…].
    tampered.stringData['password'] = value.replace(
      /data:(.)/,
      (_m, c: string) => `data:${c === 'A' ? 'B' : 'A'}`,
    );
    const digest = h.hub.addBundle([namespace, tampered]);
    h.hub.setAssignments([h.assignment({ bundleDigest: digest })]);
    await h.runAgent({ ageKey: identity });

    await expect.poll(() => h!.syncs()[0]?.outcome, poll).toBe('Failed');
    expect(h.syncs()[0]?.message).toContain('cannot decrypt Secret shop/db');
    expect(await h.read('Secret', 'db')).toBeUndefined();
  });

  it('tells the hub which fields of an encrypted object would change, never their values (#17 live diff)', async () => {
    const config: KubeObject = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'tokens' },
      data: { token: 'plain-token-value' },
    };
    const sealed = (await encryptSopsObject(config, {
      recipients: [await identityToRecipient(identity)],
      encryptedRegex: '^data$',
    })) as KubeObject;
    h = await AgentHarness.start('sops-compare');
    const digest = h.hub.addBundle([namespace, sealed, encrypted]);
    h.hub.setAssignments([
      h.assignment({ bundleDigest: digest, syncPolicy: { automated: false, selfHeal: false, prune: true } }),
    ]);
    await h.runAgent({ ageKey: identity });

    await expect.poll(() => h!.hub.reportsOf('comparison').at(-1)?.objects.length, poll).toBe(3);
    const objects = h.hub.reportsOf('comparison').at(-1)!.objects;
    expect(objects.find((o) => o.kind === 'ConfigMap')?.diff).toBe(
      [
        'diff -u -N live/v1.ConfigMap.shop.tokens desired/v1.ConfigMap.shop.tokens',
        '# SOPS-encrypted in Git: its values stay in the cluster. Fields a sync would change:',
        '#   (the whole object: it does not exist yet)',
        '',
      ].join('\n'),
    );
    const sent = JSON.stringify(h.hub.reports);
    expect(sent).not.toContain('plain-token-value');
    expect(sent).not.toContain('s3cret-value');
    expect(sent).not.toContain(Buffer.from('s3cret-value').toString('base64'));
  });
});
