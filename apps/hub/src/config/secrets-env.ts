// The keys that encrypt repository credentials at rest, and the retired ones still read during a rotation.
import { z } from 'zod';

export const secretsEnv = z.object({
  FLOTILLA_SECRETS_KEY: z
    .string()
    .regex(/^[0-9a-fA-F]{64}$/, 'must be 32 bytes as 64 hex digits (openssl rand -hex 32)')
    .optional()
    .describe('AES-256-GCM key for repository credentials at rest; unset = credentials cannot be stored.'),
  FLOTILLA_SECRETS_KEY_PREVIOUS: z
    .string()
    .regex(/^([0-9a-fA-F]{64})(,[0-9a-fA-F]{64})*$/, 'comma-separated 64-hex-digit keys')
    .optional()
    .describe(
      'Retired secrets keys (comma-separated) still read during a rotation; the hub re-encrypts with the current one at start.',
    ),
});
export type SecretsEnv = z.output<typeof secretsEnv>;

export interface SecretsConfig {
  /** AES-256-GCM keys (hex): the current one encrypts, every one decrypts. */
  secrets: { key: string | null; previousKeys: string[] };
}

export function secretsConfig(e: SecretsEnv): SecretsConfig {
  return {
    secrets: {
      key: e.FLOTILLA_SECRETS_KEY?.toLowerCase() ?? null,
      previousKeys: e.FLOTILLA_SECRETS_KEY_PREVIOUS?.toLowerCase().split(',') ?? [],
    },
  };
}
