// How the hub reports outward: how long a notification request may take, and how fresh the metrics' reason counts are.
import { z } from 'zod';

export const reportingEnv = z.object({
  NOTIFY_TIMEOUT_SECONDS: z.coerce
    .number()
    .positive()
    .max(300)
    .default(10)
    .describe(
      'How long one notification request (webhook, Slack, SMTP, commit status) may take before it counts as failed.',
    ),
  METRICS_REASONS_MAX_AGE_SECONDS: z.coerce
    .number()
    .int()
    .min(0)
    .max(3600)
    .default(30)
    .describe(
      'flotilla_targets_by_reason is computed over every target at most this often per replica; scrapes in between get the last counts (0 = at every scrape).',
    ),
});

export interface ReportingConfig {
  notifications: { timeoutSeconds: number };
  metrics: { reasonsMaxAgeSeconds: number };
}

export function reportingConfig(e: z.output<typeof reportingEnv>): ReportingConfig {
  return {
    notifications: { timeoutSeconds: e.NOTIFY_TIMEOUT_SECONDS },
    metrics: { reasonsMaxAgeSeconds: e.METRICS_REASONS_MAX_AGE_SECONDS },
  };
}
