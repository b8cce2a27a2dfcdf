import { z } from 'zod';
import { apiAnswers } from './api-schemas.js';

/**
 * GET /api/v1/explain?cluster=X&appset=Y — why a cluster gets (or does not get) an ApplicationSet's
 * targets, at which revision, and what holds them. Answered by the hub, printed by `flotilla explain`.
 */

export const explainHoldViewSchema = z
  .object({
    kind: z.enum([
      'not-expanded',
      'deletion-guard',
      'appset-error',
      'sync-window',
      'break-glass',
      'render',
      'admission-policy',
    ]),
    message: z.string(),
  })
  .register(apiAnswers, { id: 'ExplainHoldView' });
export type ExplainHoldView = z.infer<typeof explainHoldViewSchema>;

export const explainGeneratorViewSchema = z
  .object({
    index: z.number().int(),
    path: z.string(),
    type: z.string(),
    verdict: z.enum(['matched', 'not-matched', 'error']),
    reasons: z.array(z.string()),
    selectors: z.array(
      z.object({
        path: z.string(),
        matched: z.boolean(),
        unmet: z.array(z.object({ field: z.string(), requirement: z.string(), actual: z.string() })),
      }),
    ),
    produced: z.number().int(),
    kept: z.number().int(),
    targets: z.array(z.string()).describe('names of the targets this generator gives the cluster'),
  })
  .register(apiAnswers, { id: 'ExplainGeneratorView' });
export type ExplainGeneratorView = z.infer<typeof explainGeneratorViewSchema>;

export const explainTargetViewSchema = z
  .object({
    name: z.string(),
    generator: z.string().describe('`spec.generators[i]` that produced it'),
    params: z.record(z.string(), z.unknown()).describe('the parameter set the template was rendered with'),
    source: z.record(z.string(), z.unknown()),
    destination: z.object({
      name: z.string().optional(),
      server: z.string().optional(),
      namespace: z.string().optional(),
    }),
    resolvedRevision: z
      .string()
      .nullable()
      .describe("what the requested revision resolves to in the hub's mirror now (null: not resolvable)"),
    stored: z
      .object({
        desiredRevision: z.string(),
        bundleDigest: z.string().nullable(),
        lastSyncedRevision: z.string().nullable(),
        lastSyncedDigest: z.string().nullable(),
        health: z.string(),
      })
      .nullable()
      .describe('the target as stored (null: not created yet — expansion pending, held, or failing)'),
    render: z
      .object({ renderer: z.string(), deterministic: z.boolean() })
      .nullable()
      .describe('the determinism check of its render, when the hub has rendered it'),
    holds: z
      .array(explainHoldViewSchema)
      .describe('what keeps it from reaching (or changing on) the cluster now; empty: nothing'),
  })
  .register(apiAnswers, { id: 'ExplainTargetView' });
export type ExplainTargetView = z.infer<typeof explainTargetViewSchema>;

export const explainViewSchema = z
  .object({
    cluster: z.string(),
    appSet: z.string(),
    at: z.string().describe('when the answer was computed (ISO)'),
    matched: z.boolean().describe('whether any generator gives the cluster a target'),
    appSetStatus: z
      .object({ status: z.string(), error: z.unknown(), heldMessage: z.string().nullable() })
      .describe("the appset's expansion state: Ready, Pending, Held (deletion guard) or Error, with why"),
    generators: z.array(explainGeneratorViewSchema),
    targets: z.array(explainTargetViewSchema),
  })
  .register(apiAnswers, { id: 'ExplainView' });
export type ExplainView = z.infer<typeof explainViewSchema>;
