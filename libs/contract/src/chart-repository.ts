import { z } from 'zod';
import { apiAnswers, apiInputs } from './api-schemas.js';

/**
 * `PUT /api/v1/chart-repositories`: credentials for charts under a URL prefix — a Helm repository
 * (`https://…`) or an OCI registry path (`oci://host/path`). The password is write-only.
 */
export const chartRepositoryCredentialsSchema = z.strictObject({
  url: z
    .string()
    .trim()
    .regex(/^(https?|oci):\/\/[^\s/]+/, 'must be an https://, http:// or oci:// URL')
    .refine(
      (u) => !/^[a-z]+:\/\/[^/]*@/.test(u),
      'must not carry credentials: give them as username and password',
    )
    .transform((u) => u.replace(/\/+$/, '')),
  username: z.string().min(1).max(256),
  password: z.string().min(1).max(16_384),
});
chartRepositoryCredentialsSchema.register(apiInputs, { id: 'ChartRepositoryCredentialsInput' });
export type ChartRepositoryCredentials = z.infer<typeof chartRepositoryCredentialsSchema>;

/** Credentials as listed: the URL prefix and the username, never the password. */
export const chartRepositoryCredentialsViewSchema = z.object({
  id: z.string(),
  url: z.string(),
  username: z.string(),
  createdAt: z.iso.datetime(),
  updatedAt: z.iso.datetime(),
});
chartRepositoryCredentialsViewSchema.register(apiAnswers, { id: 'ChartRepositoryCredentialsView' });
export const chartRepositoryCredentialsListSchema = z
  .array(chartRepositoryCredentialsViewSchema)
  .register(apiAnswers, { id: 'ChartRepositoryCredentialsList' });
export type ChartRepositoryCredentialsView = z.infer<typeof chartRepositoryCredentialsViewSchema>;
