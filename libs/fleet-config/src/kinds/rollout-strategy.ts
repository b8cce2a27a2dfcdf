import { z } from 'zod';
import { labelSelectorSchema, metadataSchema } from '@flotilla/labels';
import { FLOTILLA_API_VERSION, goDurationSchema, intOrPercentSchema } from './common.js';

/**
 * One step of a fleet rollout: the clusters it picks (canaries first), how many may be updating at
 * once (a count or a percentage, rounded down with a minimum of 1; 0 is a manual gate), how long
 * they must stay synced and healthy before the next step, how long the step may take, and how many
 * failed clusters it tolerates before the rollout halts.
 */
export const rolloutStepSchema = z.strictObject({
  name: z.string().min(1).optional(),
  selector: labelSelectorSchema,
  maxUnavailable: intOrPercentSchema.default(1),
  bakeTime: goDurationSchema.default('0s'),
  progressDeadline: goDurationSchema.optional(),
  failureBudget: intOrPercentSchema.default(0),
});

export const rolloutStrategySpecSchema = z.strictObject({
  steps: z
    .array(rolloutStepSchema)
    .min(1, 'a rollout strategy needs at least one step')
    .superRefine((steps, ctx) => {
      // Step names show in "why the rollout waits": two alike would make that ambiguous.
      const seen = new Set<string>();
      steps.forEach((step, i) => {
        if (step.name === undefined) return;
        if (seen.has(step.name))
          ctx.addIssue({
            code: 'custom',
            message: `step name '${step.name}' is used twice`,
            path: [i, 'name'],
          });
        seen.add(step.name);
      });
    }),
});

export const rolloutStrategyObjectSchema = z.strictObject({
  apiVersion: z.literal(FLOTILLA_API_VERSION),
  kind: z.literal('RolloutStrategy'),
  metadata: metadataSchema,
  spec: rolloutStrategySpecSchema,
});

export type RolloutStrategyObject = z.infer<typeof rolloutStrategyObjectSchema>;
export type RolloutStep = z.infer<typeof rolloutStepSchema>;
