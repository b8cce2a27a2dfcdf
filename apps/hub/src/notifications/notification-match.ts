import type { NotificationPolicySpec } from '@flotilla/fleet-config';
import { compileSelector } from '@flotilla/labels';
import { globMatch } from '@flotilla/windows';
import type { TriggerHit } from './notification-triggers.js';

/** What the hub knows about an event's subject when it matches policies. */
export interface EventContext {
  appSet: string | null;
  project: string | null;
  target: string | null;
  cluster: string | null;
  clusterLabels: Record<string, string> | null;
}

/**
 * Whether a policy hears of a hit: its trigger is listed, and each selector the policy sets holds
 * (appset globs, projects, the cluster's labels). An event without a cluster (a rollout step) is not
 * filtered by the cluster selector; one without an appset only reaches policies that name none.
 */
export function policyMatches(spec: NotificationPolicySpec, hit: TriggerHit, ctx: EventContext): boolean {
  if (!spec.triggers.includes(hit.trigger)) return false;
  if (spec.appSets.length > 0) {
    if (ctx.appSet === null || !spec.appSets.some((g) => globMatch(g, ctx.appSet ?? ''))) return false;
  }
  if (spec.projects.length > 0 && (ctx.project === null || !spec.projects.includes(ctx.project)))
    return false;
  if (spec.clusterSelector && ctx.clusterLabels !== null) {
    if (!compileSelector(spec.clusterSelector, 'spec.clusterSelector')(ctx.clusterLabels)) return false;
  }
  return true;
}
