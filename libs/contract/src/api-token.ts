import { z } from 'zod';
import { apiAnswers, apiInputs, listingSchema } from './api-schemas.js';

/** The people API's roles, each including the one before: read, act on syncs, administer. */
export const peopleRoleSchema = z.enum(['viewer', 'operator', 'admin']);

/** `POST /api/v1/tokens`: a named API token for a person or a CI job. */
export const createApiTokenSchema = z.object({
  name: z
    .string()
    .regex(/^[a-z0-9]([-a-z0-9_.]*[a-z0-9])?$/, 'lower-case letters, digits, "-", "_" and "."')
    .max(63),
  role: peopleRoleSchema,
  /** Lifetime in days; tokens without one live until revoked. */
  expiresInDays: z.number().int().min(1).max(3650).optional(),
});
createApiTokenSchema.register(apiInputs, { id: 'CreateApiTokenInput' });
export type CreateApiToken = z.infer<typeof createApiTokenSchema>;

/** A token as listed: never the secret, which exists only in the create answer. */
export const apiTokenViewSchema = z.object({
  name: z.string(),
  role: peopleRoleSchema,
  createdBy: z.string(),
  createdAt: z.iso.datetime(),
  expiresAt: z.iso.datetime().nullable(),
  lastUsedAt: z.iso.datetime().nullable(),
  revokedAt: z.iso.datetime().nullable(),
});
apiTokenViewSchema.register(apiAnswers, { id: 'ApiTokenView' });
export const apiTokenListingSchema = listingSchema(apiTokenViewSchema, 'ApiToken');
export type ApiTokenView = z.infer<typeof apiTokenViewSchema>;

export const createdApiTokenSchema = z.object({
  token: apiTokenViewSchema,
  /** The bearer secret (`flp_…`), shown once: the hub keeps only its sha256. */
  secret: z.string(),
});
createdApiTokenSchema.register(apiAnswers, { id: 'CreatedApiTokenView' });
export type CreatedApiToken = z.infer<typeof createdApiTokenSchema>;
