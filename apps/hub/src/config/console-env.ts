// What the hub serves beside the API: the OpenAPI document (to whom) and the built web console.
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import type { AccessEnv } from './access-env.js';

export const consoleEnv = z.object({
  OPENAPI: z
    .enum(['authenticated', 'public', 'off'])
    .optional()
    .describe(
      'Who may read the OpenAPI document (/api/docs-json): authenticated = any people credential (viewer), public = anyone, also the /api/docs UI; off = not served. Unset: authenticated, or public on an open hub (no admin token, no OIDC).',
    ),
  FLOTILLA_CONSOLE_DIR: z
    .string()
    .optional()
    .describe(
      'The built web console (index.html and assets/) the hub serves at /; off = no console. Unset: apps/console/dist beside the hub.',
    ),
});

export interface ConsoleConfig {
  /** Who may read the OpenAPI document (see OPENAPI). */
  openApi: 'authenticated' | 'public' | 'off';
  /** The web console's built files (null: not served). */
  console: { dir: string | null };
}

export function consoleConfig(e: z.output<typeof consoleEnv> & AccessEnv): ConsoleConfig {
  return {
    // An open hub lets anyone call every route anyway; hiding their description would only hide it.
    openApi: e.OPENAPI ?? (e.FLOTILLA_ADMIN_TOKEN || e.FLOTILLA_OIDC_ISSUER ? 'authenticated' : 'public'),
    console: {
      dir:
        e.FLOTILLA_CONSOLE_DIR === 'off'
          ? null
          : (e.FLOTILLA_CONSOLE_DIR ?? fileURLToPath(new URL('../../../console/dist', import.meta.url))),
    },
  };
}
