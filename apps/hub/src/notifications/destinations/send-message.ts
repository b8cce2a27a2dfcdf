import { sendCommitStatus, type CommitStatusConfig } from './commit-status.js';
import type { OpenDestination, SendMessage } from './destination-types.js';
import { sendEmail, type EmailConfig } from './email.js';
import { postJson } from './http-post.js';
import { webhookSignature } from './webhook-signature.js';

/** Sends a message to a destination of any type, in that type's format. */
export const sendMessage: SendMessage = async (
  destination: OpenDestination,
  message,
  { timeoutMs, repoUrl },
) => {
  switch (destination.type) {
    case 'email':
      await sendEmail(
        destination.config as unknown as EmailConfig,
        destination.secret || null,
        message,
        timeoutMs,
      );
      return;
    case 'webhook': {
      const body = JSON.stringify(message);
      const timestamp = Math.floor(Date.now() / 1000);
      await postJson(
        String(destination.config['url']),
        body,
        {
          'x-flotilla-delivery': message.id,
          'x-flotilla-event': message.trigger,
          'x-flotilla-timestamp': String(timestamp),
          'x-flotilla-signature': webhookSignature(destination.secret ?? '', timestamp, body),
        },
        timeoutMs,
      );
      return;
    }
    case 'slack':
      // Slack's incoming-webhook format, which Mattermost, Rocket.Chat and others accept too.
      await postJson(
        destination.secret ?? '',
        JSON.stringify({ text: `*${message.title}*\n${message.text}` }),
        {},
        timeoutMs,
      );
      return;
    case 'commit-status':
      await sendCommitStatus(
        destination.config as unknown as CommitStatusConfig,
        destination.secret ?? '',
        message,
        {
          timeoutMs,
          repoUrl,
        },
      );
      return;
  }
};
