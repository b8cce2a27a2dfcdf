import { z } from 'zod';

/** One sync window, as written by people (YAML) and as sent to agents inside assignments. */
export const syncWindowSchema = z.object({
  kind: z.enum(['allow', 'deny']),
  schedule: z.string().min(1),
  duration: z.string().min(1),
  timeZone: z.string().default('UTC'),
  applications: z.array(z.string()).default([]),
  namespaces: z.array(z.string()).default([]),
  clusters: z.array(z.string()).default([]),
  manualSync: z.boolean().default(false),
  andOperator: z.boolean().default(false),
});
export type SyncWindow = z.infer<typeof syncWindowSchema>;
export type SyncWindowInput = z.input<typeof syncWindowSchema>;
