import { z } from 'zod';

/** Fields to leave out of drift detection, in Argo CD's `ignoreDifferences` shape. */
export const ignoreRuleSchema = z.object({
  group: z.string().default(''),
  kind: z.string().min(1),
  name: z.string().optional(),
  namespace: z.string().optional(),
  jsonPointers: z.array(z.string()).default([]),
  jqPathExpressions: z.array(z.string()).default([]),
  managedFieldsManagers: z.array(z.string()).default([]),
});
export type IgnoreRule = z.infer<typeof ignoreRuleSchema>;
export type IgnoreRuleInput = z.input<typeof ignoreRuleSchema>;
