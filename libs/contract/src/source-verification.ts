import { z } from 'zod';
import { apiAnswers, apiInputs } from './api-schemas.js';

/**
 * Which commits of a repository must be signed by an allowed key before a revision is released:
 * `none` (no requirement), `head` (the commit to deploy), `strict` (every commit since the last
 * verified one). docs/verified-sources.md.
 */
export const VERIFICATION_MODES = ['none', 'head', 'strict'] as const;
export const verificationModeSchema = z.enum(VERIFICATION_MODES);
export type VerificationMode = z.infer<typeof verificationModeSchema>;

/** `PUT /api/v1/repositories/:id/verification`: the mode and both key lists, each replaced whole. */
/** GPG public keys as one ASCII-armored keyring (commit signatures and chart provenance); left out: none. */
export const gpgKeyringSchema = z
  .string()
  .max(1024 * 1024)
  .default('');

export const repositoryVerificationSchema = z.strictObject({
  mode: verificationModeSchema,
  /** SSH keys, in git's `gpg.ssh.allowedSignersFile` format; left out: none. */
  allowedSigners: z
    .string()
    .max(256 * 1024)
    .default(''),
  /** GPG public keys, one ASCII-armored keyring; left out: none. */
  gpgKeys: gpgKeyringSchema,
});
export type RepositoryVerification = z.output<typeof repositoryVerificationSchema>;

/** One version of a repository's verification settings: the keys, their fingerprints, who set them when. */
export const repositoryVerificationChangeSchema = z.object({
  mode: verificationModeSchema,
  allowedSigners: z.string(),
  gpgKeys: z.string(),
  /** SSH `SHA256:…` and GPG hex fingerprints of the allowed keys. */
  fingerprints: z.array(z.string()),
  setBy: z.string().nullable(),
  setAt: z.iso.datetime().nullable(),
});
export type RepositoryVerificationChange = z.infer<typeof repositoryVerificationChangeSchema>;

/** `GET /api/v1/repositories/:id/verification`: the settings in force, for the repository at `repository`. */
export const repositoryVerificationViewSchema = repositoryVerificationChangeSchema.extend({
  repository: z.string(),
  /** 'git': declared by a fleet repository's SourceVerification (the API refuses changes); null: the API's. */
  managedBy: z.string().nullable(),
});
export type RepositoryVerificationView = z.infer<typeof repositoryVerificationViewSchema>;

repositoryVerificationSchema.register(apiInputs, { id: 'RepositoryVerification' });
repositoryVerificationViewSchema.register(apiAnswers, { id: 'RepositoryVerificationView' });
export const repositoryVerificationHistorySchema = z
  .array(repositoryVerificationChangeSchema)
  .register(apiAnswers, { id: 'RepositoryVerificationHistory' });
