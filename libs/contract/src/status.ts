import { z } from 'zod';

/** Argo CD's health vocabulary, so people read it without a glossary. Ordered best to worst for "worst of". */
export const HEALTH_STATUSES = [
  'Healthy',
  'Suspended',
  'Progressing',
  'Missing',
  'Degraded',
  'Unknown',
] as const;
export const healthStatusSchema = z.enum(HEALTH_STATUSES);
export type HealthStatus = z.infer<typeof healthStatusSchema>;

export const SYNC_STATUSES = ['Synced', 'OutOfSync', 'Unknown'] as const;
export const syncStatusSchema = z.enum(SYNC_STATUSES);
export type SyncStatus = z.infer<typeof syncStatusSchema>;

/** Why a sync ran; every sync run in the history carries one. */
export const SYNC_TRIGGERS = ['auto', 'manual', 'self-heal', 'rollback'] as const;
export const syncTriggerSchema = z.enum(SYNC_TRIGGERS);
export type SyncTrigger = z.infer<typeof syncTriggerSchema>;

/**
 * How a sync run ended. `Terminated`: a person stopped a requested sync while it ran
 * (`POST /api/v1/operations/:id/terminate`); its resources say what was applied before it stopped.
 */
export const SYNC_OUTCOMES = ['Succeeded', 'Failed', 'Partial', 'Blocked', 'Terminated'] as const;
export const syncOutcomeSchema = z.enum(SYNC_OUTCOMES);
export type SyncOutcome = z.infer<typeof syncOutcomeSchema>;

export const RESOURCE_ACTIONS = ['applied', 'unchanged', 'pruned', 'failed'] as const;
export const resourceActionSchema = z.enum(RESOURCE_ACTIONS);
export type ResourceAction = z.infer<typeof resourceActionSchema>;
