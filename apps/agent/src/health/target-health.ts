import { HEALTH_STATUSES, type HealthStatus, type KubeObject, type ObjectRef } from '@flotilla/contract';

export interface ResourceHealth {
  status: HealthStatus;
  message: string;
}

/** What the agent needs from `@flotilla/health`: null when no rule knows the kind. */
export interface HealthAssessor {
  assess(obj: KubeObject): ResourceHealth | null;
}

export interface TargetHealth {
  status: HealthStatus;
  message: string;
  resources: (ObjectRef & ResourceHealth)[];
}

const rank = (s: HealthStatus): number => HEALTH_STATUSES.indexOf(s);

/**
 * A target's health is the worst of its objects', in Argo CD's order (Healthy < Suspended <
 * Progressing < Missing < Degraded < Unknown). As in Argo CD, one missing object does not make the
 * target Missing (being out of sync already says so); only when every object is missing is it.
 * Objects no rule knows are left out; a target with nothing to judge is Healthy.
 */
export function aggregateHealth(
  objects: readonly { ref: ObjectRef; live: KubeObject | undefined }[],
  assessor: HealthAssessor,
): TargetHealth {
  const resources: TargetHealth['resources'] = [];
  let worst: HealthStatus = 'Healthy';
  let missing = 0;
  for (const { ref, live } of objects) {
    let health: ResourceHealth | null;
    if (live === undefined) {
      missing++;
      health = { status: 'Missing', message: 'not found in the cluster' };
    } else {
      try {
        health = assessor.assess(live);
      } catch (err) {
        health = { status: 'Unknown', message: `health check failed: ${(err as Error).message}` };
      }
    }
    if (health === null) continue;
    resources.push({ ...ref, ...health });
    if (health.status !== 'Missing' && rank(health.status) > rank(worst)) worst = health.status;
  }
  if (objects.length > 0 && missing === objects.length) worst = 'Missing';
  const culprits = resources.filter((r) => r.status === worst && worst !== 'Healthy');
  const named = culprits
    .slice(0, 3)
    .map(
      (r) =>
        `${r.group ? `${r.group}/` : ''}${r.kind}:${r.namespace ? `${r.namespace}/` : ''}${r.name}${r.message ? ` (${r.message})` : ''}`,
    );
  const more = culprits.length > 3 ? ` and ${culprits.length - 3} more` : '';
  return { status: worst, message: named.length ? `${named.join(', ')}${more}` : '', resources };
}
