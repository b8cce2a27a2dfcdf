import { BREAK_GLASS_SCOPES } from '@flotilla/contract';
import { z } from 'zod';
import { pageQueryFields } from '../common/name-page.js';

/** POST /api/v1/break-glass. The maximum duration is checked by the service (it is configuration). */
export const openBreakGlassSchema = z
  .object({
    scope: z.enum(BREAK_GLASS_SCOPES),
    name: z.string().min(1),
    reason: z.string().trim().min(1, 'a reason is required: say what the incident is').max(1000),
    durationMinutes: z.number().int().positive().optional(),
    expiresAt: z.iso.datetime({ offset: true }).optional(),
    allowSyncOutsideWindows: z.boolean().default(false),
    pauseSelfHeal: z.boolean().default(false),
  })
  .strict()
  .superRefine((v, ctx) => {
    if ((v.durationMinutes === undefined) === (v.expiresAt === undefined)) {
      ctx.addIssue({
        code: 'custom',
        path: ['durationMinutes'],
        message: 'give exactly one of durationMinutes and expiresAt',
      });
    }
    if (!v.allowSyncOutsideWindows && !v.pauseSelfHeal) {
      ctx.addIssue({
        code: 'custom',
        path: ['allowSyncOutsideWindows'],
        message: 'an override must allow syncing outside windows, pause self-heal, or both',
      });
    }
  });
export type OpenBreakGlass = z.infer<typeof openBreakGlassSchema>;

export const closeBreakGlassSchema = z
  .object({ reason: z.string().trim().max(1000).default('') })
  .strict()
  .default({ reason: '' });

export const breakGlassIdSchema = z.coerce.number().int().positive();

export const listBreakGlassQuery = z.object({
  state: z.enum(['active', 'closed', 'all']).default('all'),
  ...pageQueryFields,
});
