import { createTransport } from 'nodemailer';
import { z } from 'zod';
import type { NotificationMessage } from '../notification-message.js';
import { DeliveryError } from './http-post.js';

/** How the connection to the SMTP server is protected. */
export const SMTP_TLS_MODES = ['implicit', 'starttls', 'none'] as const;

const address = z.email({ error: 'an e-mail address such as ops@example.com' });

/** An e-mail destination as the API takes it (the shape, without `name` and `type`). */
export const emailDestinationFields = {
  host: z
    .string()
    .min(1)
    .max(253)
    .regex(/^[A-Za-z0-9.-]+$|^\[[0-9A-Fa-f:.]+\]$/, 'a host name or an IP address'),
  port: z.number().int().min(1).max(65535).default(587),
  /** implicit: TLS from the first byte (port 465); starttls: upgrade required (587); none: plain. */
  tls: z.enum(SMTP_TLS_MODES).default('starttls'),
  username: z.string().min(1).max(512).optional(),
  password: z.string().min(1).max(1024).optional(),
  from: address,
  to: z.array(address).min(1, 'at least one recipient').max(50, 'at most 50 recipients'),
};

const LOOPBACK = /^(localhost|127(\.\d{1,3}){3}|\[::1\])$/i;

/**
 * Refusals the field shapes cannot express: a username needs its password (and the reverse), and a
 * password never travels over a plain connection except to this machine (a relay on loopback).
 */
export function checkEmailDestination(
  v: { host: string; tls: (typeof SMTP_TLS_MODES)[number]; username?: string; password?: string },
  ctx: z.RefinementCtx,
): void {
  if (Boolean(v.username) !== Boolean(v.password))
    ctx.addIssue({
      code: 'custom',
      path: [v.username ? 'password' : 'username'],
      message: 'username and password go together',
    });
  if (v.password && v.tls === 'none' && !LOOPBACK.test(v.host))
    ctx.addIssue({
      code: 'custom',
      path: ['tls'],
      message: 'a password is only sent over TLS (implicit or starttls), or to a relay on loopback',
    });
}

export interface EmailConfig {
  host: string;
  port: number;
  tls: (typeof SMTP_TLS_MODES)[number];
  username?: string;
  from: string;
  to: string[];
}

/**
 * Sends the message as a plain-text e-mail. Its Message-ID is the delivery's id, the same on every
 * retry, so a mail system that already took it (the answer was lost) can drop the repeat.
 */
export async function sendEmail(
  config: EmailConfig,
  password: string | null,
  message: NotificationMessage,
  timeoutMs: number,
): Promise<void> {
  const transport = createTransport({
    host: config.host,
    port: config.port,
    secure: config.tls === 'implicit',
    requireTLS: config.tls === 'starttls',
    ignoreTLS: config.tls === 'none',
    ...(config.username && password && { auth: { user: config.username, pass: password } }),
    connectionTimeout: timeoutMs,
    greetingTimeout: timeoutMs,
    socketTimeout: timeoutMs,
  });
  try {
    await transport.sendMail({
      from: config.from,
      to: config.to,
      subject: `[Flotilla] ${message.title}`,
      text: message.text,
      messageId: `<${message.id}@flotilla>`,
      headers: { 'X-Flotilla-Delivery': message.id, 'X-Flotilla-Event': message.trigger },
    });
  } catch (e) {
    const why = e instanceof Error ? e.message : String(e);
    throw new DeliveryError(`SMTP ${config.host}:${config.port}: ${why}`);
  } finally {
    transport.close();
  }
}
