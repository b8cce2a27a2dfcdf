import { z } from 'zod';
import { apiAnswers } from './api-schemas.js';

/**
 * A followed fleet repository as the hub's API shows it (`/api/v1/fleet-sources`): the hub builds
 * it (fleet-repo), the CLI prints it.
 */

/** Why the source is not Ready: `invalid-commit` lists each problem by file, `deletion-held` waits for a person. */
export const fleetSourceErrorViewSchema = z
  .looseObject({
    code: z.string(),
    message: z.string(),
    errors: z
      .array(
        z.looseObject({
          file: z.string(),
          document: z.number().int(),
          path: z.string(),
          message: z.string(),
        }),
      )
      .optional(),
  })
  .register(apiAnswers, { id: 'FleetSourceErrorView' });

/** What a held commit would delete (the deletion guard), until a person confirms it. */
export const pendingDeletionViewSchema = z
  .object({
    commit: z.string(),
    delete: z.array(z.string()),
    currentCount: z.number().int(),
    deletePercent: z.number(),
    limit: z.number(),
    targets: z.object({
      current: z.number().int(),
      deleting: z.number().int(),
      baseline: z.number().int(),
      deletePercent: z.number(),
    }),
    heldAt: z.string(),
  })
  .register(apiAnswers, { id: 'PendingDeletionView' });

/** One source (`GET /api/v1/fleet-sources`, `POST` answers it too). */
export const fleetSourceViewSchema = z
  .object({
    id: z.string(),
    repoUrl: z.string(),
    revision: z.string(),
    path: z.string(),
    status: z.string().describe('Pending, Ready, Error or Held'),
    error: fleetSourceErrorViewSchema.nullable(),
    pendingDeletion: pendingDeletionViewSchema.nullable(),
    appliedCommit: z.string().nullable(),
    appliedAuthor: z.string().nullable(),
    appliedAt: z.string().nullable(),
    seenCommit: z.string().nullable(),
    createdAt: z.string(),
  })
  .register(apiAnswers, { id: 'FleetSourceView' });

/** One source with the objects it manages (`GET /api/v1/fleet-sources/:id`). */
export const fleetSourceDetailViewSchema = fleetSourceViewSchema
  .extend({
    objects: z.array(
      z.object({
        kind: z.string(),
        name: z.string(),
        file: z.string(),
        commit: z.string(),
        diverged: z
          .object({ at: z.string(), by: z.string().nullable(), breakGlassId: z.number().int().nullable() })
          .nullable()
          .describe('changed under a break-glass: the hub differs from Git until the next commit'),
      }),
    ),
  })
  .register(apiAnswers, { id: 'FleetSourceDetailView' });

export type FleetSourceErrorView = z.infer<typeof fleetSourceErrorViewSchema>;
export type PendingDeletionView = z.infer<typeof pendingDeletionViewSchema>;
export type FleetSourceView = z.infer<typeof fleetSourceViewSchema>;
export type FleetSourceDetailView = z.infer<typeof fleetSourceDetailViewSchema>;
