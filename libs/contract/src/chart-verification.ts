import { z } from 'zod';
import { apiAnswers, apiInputs } from './api-schemas.js';
import { gpgKeyringSchema } from './source-verification.js';

/**
 * Whether the charts of a Helm repository must carry a provenance file (`.prov`) signed by an
 * allowed key: `none`, `when-present` (a chart with a `.prov` must verify; one without is released),
 * `required` (a chart without one is refused). docs/verified-sources.md, Helm provenance.
 */
export const CHART_VERIFY_MODES = ['none', 'when-present', 'required'] as const;
export const chartVerifyModeSchema = z.enum(CHART_VERIFY_MODES);
export type ChartVerifySetting = z.infer<typeof chartVerifyModeSchema>;

/** `PUT /api/v1/chart-repositories/verification`: one repository's setting, its keyring replaced whole. */
export const chartRepositoryVerificationSchema = z.strictObject({
  /** The chart repository's URL as sources write it: `https://…` or `oci://…`. */
  url: z.string().min(1).max(2048),
  verify: chartVerifyModeSchema,
  /** GPG public keys allowed to sign the repository's charts, one ASCII-armored keyring; left out: none. */
  gpgKeys: gpgKeyringSchema,
});
export type ChartRepositoryVerification = z.output<typeof chartRepositoryVerificationSchema>;

/** One version of a chart repository's setting: the keys, their fingerprints, who set them when. */
export const chartRepositoryVerificationChangeSchema = z.object({
  url: z.string(),
  verify: chartVerifyModeSchema,
  gpgKeys: z.string(),
  /** GPG hex fingerprints of the allowed keys. */
  fingerprints: z.array(z.string()),
  setBy: z.string().nullable(),
  setAt: z.iso.datetime().nullable(),
});
export type ChartRepositoryVerificationChange = z.infer<typeof chartRepositoryVerificationChangeSchema>;

/** `GET /api/v1/chart-repositories/verification?url=`: the setting in force for the repository at `url`. */
export const chartRepositoryVerificationViewSchema = chartRepositoryVerificationChangeSchema;
export type ChartRepositoryVerificationView = z.infer<typeof chartRepositoryVerificationViewSchema>;

chartRepositoryVerificationSchema.register(apiInputs, { id: 'ChartRepositoryVerification' });
chartRepositoryVerificationViewSchema.register(apiAnswers, { id: 'ChartRepositoryVerificationView' });
export const chartRepositoryVerificationListSchema = z
  .array(chartRepositoryVerificationViewSchema)
  .register(apiAnswers, { id: 'ChartRepositoryVerificationList' });
export const chartRepositoryVerificationHistorySchema = z
  .array(chartRepositoryVerificationChangeSchema)
  .register(apiAnswers, { id: 'ChartRepositoryVerificationHistory' });

/** `GET /api/v1/chart-repositories/verification[/history]?url=`: one repository; without, every one. */
export const chartRepositoryVerificationQuerySchema = z.strictObject({
  url: z.string().min(1).max(2048).optional(),
});
