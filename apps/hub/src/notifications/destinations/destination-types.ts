import { z } from 'zod';
import type { NotificationMessage } from '../notification-message.js';
import { DEFAULT_API_URLS, GIT_HOST_PROVIDERS } from './commit-status.js';
import { checkEmailDestination, emailDestinationFields } from './email.js';

const nameSchema = z.string().regex(/^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/, 'a lowercase DNS-style name');

const httpUrl = z
  .url({ protocol: /^https?$/, error: 'expected an http:// or https:// URL' })
  .max(2048, 'a URL must be at most 2048 characters');

/**
 * A destination as the API takes it. The secret part of each type (the HMAC key, the Slack URL, which
 * is its own credential, the SMTP password, the API token) is sealed at rest and never shown again.
 */
export const destinationInputSchema = z.discriminatedUnion('type', [
  z
    .strictObject({ name: nameSchema, type: z.literal('email'), ...emailDestinationFields })
    .superRefine(checkEmailDestination),
  z.strictObject({
    name: nameSchema,
    type: z.literal('webhook'),
    url: httpUrl,
    secret: z.string().min(16, 'an HMAC secret of at least 16 characters').max(1024),
  }),
  z.strictObject({
    name: nameSchema,
    type: z.literal('slack'),
    url: httpUrl,
  }),
  z
    .strictObject({
      name: nameSchema,
      type: z.literal('commit-status'),
      provider: z.enum(GIT_HOST_PROVIDERS),
      apiUrl: httpUrl.optional(),
      token: z.string().min(1, 'an API token that may set commit statuses').max(4096),
      repository: z
        .string()
        .regex(/^[^/\s]+(\/[^/\s]+)+$/, 'owner/name (GitLab: the full project path)')
        .optional(),
      context: z.string().min(1).max(255).optional(),
    })
    .superRefine((v, ctx) => {
      if (!v.apiUrl && !DEFAULT_API_URLS[v.provider])
        ctx.addIssue({
          code: 'custom',
          path: ['apiUrl'],
          message: `${v.provider} needs the API URL of its host`,
        });
    }),
]);
export type DestinationInput = z.output<typeof destinationInputSchema>;
export type DestinationType = DestinationInput['type'];

/** A destination ready to send: its shown settings and its opened secret. */
export interface OpenDestination {
  id: string;
  name: string;
  type: DestinationType;
  config: Record<string, unknown>;
  secret: string | null;
}

/** Splits the input into what is shown (`config`) and what is sealed (`secret`). */
export function splitSecret(input: DestinationInput): { config: Record<string, unknown>; secret: string } {
  switch (input.type) {
    case 'email': {
      const { name: _name, type: _type, password, ...shown } = input;
      return { config: shown, secret: password ?? '' };
    }
    case 'webhook':
      return { config: { url: input.url }, secret: input.secret };
    case 'slack':
      // The path of an incoming-webhook URL is the credential: show only where it goes.
      return { config: { host: new URL(input.url).host }, secret: input.url };
    case 'commit-status':
      return {
        config: {
          provider: input.provider,
          apiUrl: input.apiUrl ?? DEFAULT_API_URLS[input.provider],
          ...(input.repository && { repository: input.repository }),
          ...(input.context && { context: input.context }),
        },
        secret: input.token,
      };
  }
}

/** Sends one message; resolves when the receiver accepted it, rejects with why not. */
export type SendMessage = (
  destination: OpenDestination,
  message: NotificationMessage,
  opts: { timeoutMs: number; /** The appset's repository, for commit statuses. */ repoUrl: string | null },
) => Promise<void>;
