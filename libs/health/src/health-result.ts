import { type HealthStatus } from '@flotilla/contract';

export type { HealthStatus };

/** One object's verdict: Argo CD's status vocabulary and a message for people (empty when there is nothing to say). */
export interface HealthResult {
  status: HealthStatus;
  message: string;
}

/**
 * Argo CD's `healthOrder`, most to least healthy. Kept here rather than imported from the contract's runtime
 * list so that assessing health never loads zod (the CLI runs thousands of cases per process).
 */
export const HEALTH_ORDER: readonly HealthStatus[] = [
  'Healthy',
  'Suspended',
  'Progressing',
  'Missing',
  'Degraded',
  'Unknown',
];

export function isHealthStatus(value: unknown): value is HealthStatus {
  return typeof value === 'string' && (HEALTH_ORDER as readonly string[]).includes(value);
}

/**
 * The worst of several statuses in Argo CD's order (`health.IsWorse`); `Healthy` for an empty list, as an
 * application with no assessed resources is healthy in Argo CD.
 */
export function worstHealth(statuses: HealthStatus[]): HealthStatus {
  let worst = 0;
  for (const status of statuses) worst = Math.max(worst, HEALTH_ORDER.indexOf(status));
  return HEALTH_ORDER[worst] ?? 'Healthy';
}
