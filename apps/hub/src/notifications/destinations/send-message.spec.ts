import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  startTestNotificationReceiver,
  type TestNotificationReceiver,
} from '../../testing/test-notification-receiver.js';
import type { NotificationMessage } from '../notification-message.js';
import { sendMessage } from './send-message.js';

const message: NotificationMessage = {
  id: '7f0c2a4e-1111-4222-8333-944455556666',
  policy: 'web-failures',
  trigger: 'sync-failed',
  title: 'sync-failed: web (2 events)',
  text: 'web-eu-1: sync failed at 0123456789ab: quota\nweb-us-1: sync failed at 0123456789ab: quota',
  count: 2,
  appSet: 'web',
  revision: '0123456789abcdef0123456789abcdef01234567',
  events: [],
};
const opts = { timeoutMs: 5_000, repoUrl: null };

/** The request each HTTP destination sends, as a receiver on 127.0.0.1 sees it. */
describe('HTTP destinations (receivers on 127.0.0.1)', () => {
  let slack: Server;
  let slackUrl = '';
  const slackRequests: { method: string; path: string; contentType: string; body: unknown }[] = [];
  let webhook: TestNotificationReceiver;

  beforeAll(async () => {
    slack = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        slackRequests.push({
          method: req.method ?? '',
          path: req.url ?? '',
          contentType: String(req.headers['content-type'] ?? ''),
          body: JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown,
        });
        // What Slack answers to an accepted incoming-webhook post.
        res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
      });
    });
    await new Promise<void>((resolve) => slack.listen(0, '127.0.0.1', resolve));
    const address = slack.address();
    slackUrl = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/services/T000/B000/XXXX`;
    webhook = await startTestNotificationReceiver('a-shared-hmac-secret-of-the-team', 'ok');
  });
  afterAll(async () => {
    slack.closeAllConnections();
    await new Promise<void>((resolve) => slack.close(() => resolve()));
    await webhook.close();
  });

  it('Slack-compatible: POSTs JSON {text} to the incoming-webhook URL (its sealed secret)', async () => {
    await sendMessage(
      { id: 'd', name: 'chat', type: 'slack', config: { host: '127.0.0.1' }, secret: slackUrl },
      message,
      opts,
    );
    expect(slackRequests).toEqual([
      {
        method: 'POST',
        path: '/services/T000/B000/XXXX',
        contentType: 'application/json',
        body: { text: `*${message.title}*\n${message.text}` },
      },
    ]);
  });

  it('webhook: the message as JSON, signed over "<timestamp>.<body>" with the shared secret', async () => {
    await sendMessage(
      {
        id: 'd',
        name: 'team',
        type: 'webhook',
        config: { url: webhook.url },
        secret: 'a-shared-hmac-secret-of-the-team',
      },
      message,
      opts,
    );
    const [got] = webhook.messages();
    expect(got).toMatchObject({ delivery: message.id, event: 'sync-failed', signatureValid: true });
    expect(got?.body).toEqual(JSON.parse(JSON.stringify(message)));
  });

  it('webhook: a receiver holding another secret refuses it, and the send fails with its answer', async () => {
    await expect(
      sendMessage(
        {
          id: 'd',
          name: 'team',
          type: 'webhook',
          config: { url: webhook.url },
          secret: 'not-the-secret-the-receiver-holds',
        },
        message,
        opts,
      ),
    ).rejects.toThrow(/401/);
    expect(webhook.messages()).toHaveLength(1);
  });
});
