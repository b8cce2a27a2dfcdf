import { z } from 'zod';
import { apiAnswers } from './api-schemas.js';

/**
 * A pin as the hub's API shows it (`GET /api/v1/pins`, one page of them with `limit`/`cursor`): the
 * hub builds it (release/pins), the CLI prints it.
 */
export const pinViewSchema = z
  .object({
    target: z.string(),
    revision: z.string(),
    bundleDigest: z.string(),
    reason: z.string(),
    actor: z.string(),
    createdAt: z.string(),
    expiresAt: z.string().nullable(),
    expired: z.boolean().describe('its expiry passed: shown, but no longer served'),
  })
  .register(apiAnswers, { id: 'PinView' });
export type PinView = z.infer<typeof pinViewSchema>;
