import { z } from 'zod';
import { metadataSchema } from '@flotilla/labels';
import { verificationModeSchema } from '@flotilla/contract';
import { AllowedSignersError, parseAllowedSigners } from '../allowed-signers.js';
import { FLOTILLA_API_VERSION } from './common.js';

/**
 * Which commits of one Git repository must be signed by an allowed key before a revision of it is
 * released (docs/verified-sources.md), declared in the fleet repository so that a key change is a
 * reviewed commit. The GPG keyring is checked by the hub (it needs gpg); everything else here.
 */
export const sourceVerificationSpecSchema = z
  .strictObject({
    repoURL: z.string().min(1),
    mode: verificationModeSchema,
    /** SSH keys, in git's allowed-signers format. */
    allowedSigners: z.string().default(''),
    /** GPG public keys, one ASCII-armored keyring. */
    gpgKeys: z.string().default(''),
  })
  .superRefine((spec, ctx) => {
    try {
      parseAllowedSigners(spec.allowedSigners);
    } catch (e) {
      if (!(e instanceof AllowedSignersError)) throw e;
      ctx.addIssue({ code: 'custom', message: e.message, path: ['allowedSigners'] });
      return;
    }
    if (spec.mode !== 'none' && spec.allowedSigners.trim() === '' && spec.gpgKeys.trim() === '')
      ctx.addIssue({
        code: 'custom',
        message: `mode ${spec.mode} needs at least one allowed key (allowedSigners or gpgKeys)`,
        path: ['allowedSigners'],
      });
  });

export const sourceVerificationObjectSchema = z.strictObject({
  apiVersion: z.literal(FLOTILLA_API_VERSION),
  kind: z.literal('SourceVerification'),
  metadata: metadataSchema,
  spec: sourceVerificationSpecSchema,
});

export type SourceVerificationObject = z.infer<typeof sourceVerificationObjectSchema>;
