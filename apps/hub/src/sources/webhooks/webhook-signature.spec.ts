import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  detectProvider,
  githubSignature,
  verifyDelivery,
  WebhookAuthError,
  type WebhookHeaders,
} from './webhook-signature.js';

const SECRET = 'a-webhook-secret-of-32-characters';
const body = readFileSync(new URL('./testdata/github-push.json', import.meta.url));
const hex = (secret: string, b: Buffer) => createHmac('sha256', secret).update(b).digest('hex');

function refusal(headers: WebhookHeaders, raw: Buffer = body, secret = SECRET): WebhookAuthError {
  try {
    verifyDelivery(detectProvider(headers), headers, raw, secret);
  } catch (e) {
    if (e instanceof WebhookAuthError) return e;
    throw e;
  }
  throw new Error('expected the delivery to be refused');
}

const tampered = Buffer.from(body.toString('utf8').replace('1.1.0', '6.6.6'));

describe('detectProvider', () => {
  it('reads the provider and event from its own header, Gitea first (it also sends GitHub headers)', () => {
    expect(detectProvider({ 'x-github-event': 'push' })).toEqual({ provider: 'github', event: 'push' });
    expect(detectProvider({ 'x-gitlab-event': 'Push Hook' })).toEqual({
      provider: 'gitlab',
      event: 'Push Hook',
    });
    expect(detectProvider({ 'x-gitea-event': 'push', 'x-github-event': 'push' })).toEqual({
      provider: 'gitea',
      event: 'push',
    });
  });

  it('refuses a request from none of them', () => {
    expect(() => detectProvider({ 'content-type': 'application/json' })).toThrow(
      expect.objectContaining({ code: 'webhook-provider-unknown' }),
    );
  });
});

describe('verifyDelivery: GitHub', () => {
  const ok = { 'x-github-event': 'push', 'x-hub-signature-256': `sha256=${hex(SECRET, body)}` };

  it('accepts the HMAC-SHA256 of the raw body (hex case does not matter)', () => {
    expect(() => verifyDelivery(detectProvider(ok), ok, body, SECRET)).not.toThrow();
    const upper = { ...ok, 'x-hub-signature-256': `sha256=${hex(SECRET, body).toUpperCase()}` };
    expect(() => verifyDelivery(detectProvider(upper), upper, body, SECRET)).not.toThrow();
    expect(githubSignature(SECRET, body)).toBe(ok['x-hub-signature-256']);
  });

  it('refuses a missing signature, naming the header', () => {
    const e = refusal({ 'x-github-event': 'push' });
    expect([e.code, e.header]).toEqual(['webhook-signature-missing', 'x-hub-signature-256']);
    expect(e.message).toContain('FLOTILLA_WEBHOOK_SECRET');
  });

  it('refuses a bad signature, another secret, a tampered body and the legacy sha1 form', () => {
    for (const [headers, raw] of [
      [{ ...ok, 'x-hub-signature-256': 'sha256=00ff' }, body],
      [{ ...ok, 'x-hub-signature-256': `sha256=${hex('another-secret-entirely', body)}` }, body],
      [ok, tampered],
      [
        { ...ok, 'x-hub-signature-256': `sha1=${createHmac('sha1', SECRET).update(body).digest('hex')}` },
        body,
      ],
    ] as const) {
      const e = refusal(headers, raw);
      expect([e.code, e.header]).toEqual(['webhook-signature-invalid', 'x-hub-signature-256']);
    }
  });

  it('refuses a good signature checked against the wrong configured secret', () => {
    expect(refusal(ok, body, 'the-hub-has-another-secret').code).toBe('webhook-signature-invalid');
  });
});

describe('verifyDelivery: Gitea', () => {
  const ok = { 'x-gitea-event': 'push', 'x-gitea-signature': hex(SECRET, body) };

  it('accepts the bare hex HMAC-SHA256 of the raw body', () => {
    expect(() => verifyDelivery(detectProvider(ok), ok, body, SECRET)).not.toThrow();
  });

  it('refuses a missing or bad signature, another secret and a tampered body', () => {
    expect(refusal({ 'x-gitea-event': 'push' }).code).toBe('webhook-signature-missing');
    expect(refusal({ ...ok, 'x-gitea-signature': `sha256=${hex(SECRET, body)}` }).code).toBe(
      'webhook-signature-invalid',
    );
    expect(refusal({ ...ok, 'x-gitea-signature': hex('another-secret-entirely', body) }).code).toBe(
      'webhook-signature-invalid',
    );
    const e = refusal(ok, tampered);
    expect([e.code, e.header]).toEqual(['webhook-signature-invalid', 'x-gitea-signature']);
  });
});

describe('verifyDelivery: GitLab', () => {
  const ok = { 'x-gitlab-event': 'Push Hook', 'x-gitlab-token': SECRET };

  it('accepts the shared token whatever the body (GitLab signs nothing)', () => {
    expect(() => verifyDelivery(detectProvider(ok), ok, body, SECRET)).not.toThrow();
    expect(() => verifyDelivery(detectProvider(ok), ok, tampered, SECRET)).not.toThrow();
  });

  it('refuses a missing, wrong, truncated or extended token', () => {
    expect(refusal({ 'x-gitlab-event': 'Push Hook' }).code).toBe('webhook-signature-missing');
    for (const token of ['wrong', SECRET.slice(0, -1), `${SECRET}x`]) {
      const e = refusal({ ...ok, 'x-gitlab-token': token });
      expect([e.code, e.header]).toEqual(['webhook-signature-invalid', 'x-gitlab-token']);
    }
    expect(refusal(ok, body, 'the-hub-has-another-secret').code).toBe('webhook-signature-invalid');
  });
});
