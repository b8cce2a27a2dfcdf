// What POST /api/v1/plan takes.
import { z } from 'zod';

const revision = (field: 'base' | 'head', meaning: string) =>
  z
    .string()
    .trim()
    .min(1, `the ${field} revision is required`)
    .max(256, `the ${field} revision is longer than 256 characters`)
    // Passed to git as a revision: an option (`-…`) or whitespace is never one.
    .regex(/^[^-\s]\S*$/, `the ${field} revision must be a branch, tag or commit (no spaces, no leading '-')`)
    .meta({ description: meaning });

export const planBody = z.strictObject({
  fleetSource: z
    .string()
    .trim()
    .min(1, 'a fleet source id or repository URL; leave the field out when the hub follows one')
    .optional()
    .meta({
      description:
        "a fleet source's id or its repository URL (GET /api/v1/fleet-sources); optional when the hub follows one",
    }),
  base: revision('base', 'the revision merged onto (a branch, tag or commit of the fleet repository)'),
  head: revision('head', 'the revision to merge'),
  at: z.iso
    .datetime({ offset: true, message: 'an RFC 3339 time such as 2026-03-01T09:00:00Z' })
    .optional()
    .meta({ description: 'when sync windows are evaluated (default now)' }),
});

export type PlanRequest = z.output<typeof planBody>;
