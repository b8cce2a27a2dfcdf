import { getPath, type JsonObject, str } from '../json.js';
import { condition, type ControllerContext, num, templateHash } from './controller-context.js';
import { isPodReady, isTerminating, podFromTemplate, podPhase } from './pods.js';

function podsOf(ctx: ControllerContext, owner: JsonObject, all: JsonObject[]): JsonObject[] {
  return ctx.ownedBy(all, owner).filter((p) => !isTerminating(p));
}

/**
 * StatefulSets: pods `<name>-0..N-1`, created in order once the previous one is ready
 * (OrderedReady), replaced from the highest ordinal down on a template change; revisions are
 * `<name>-<hash>` and currentRevision catches up with updateRevision when the rollout is done.
 */
export function reconcileStatefulSets(ctx: ControllerContext): void {
  const rt = ctx.rt('apps', 'statefulsets');
  const podRt = ctx.rt('', 'pods');
  const allPods = ctx.list('', 'pods');
  for (const sts of ctx.list('apps', 'statefulsets')) {
    if (isTerminating(sts)) continue;
    const m = sts['metadata'] as JsonObject;
    const spec = (sts['spec'] ?? {}) as JsonObject;
    const name = str(m['name']);
    const ns = str(m['namespace']);
    const desired = num(spec['replicas'], 1);
    const revision = `${name}-${templateHash(spec['template'])}`;
    const pods = podsOf(ctx, sts, allPods);
    const byOrdinal = new Map(
      pods.map((p) => [Number(str(getPath(p, ['metadata', 'name'])).slice(name.length + 1)), p]),
    );
    const rev = (p: JsonObject): string =>
      str(getPath(p, ['metadata', 'labels', 'controller-revision-hash']) ?? '');
    const parallel = spec['podManagementPolicy'] === 'Parallel';
    let blocked = false;
    for (let i = 0; i < desired; i++) {
      const p = byOrdinal.get(i);
      if (!p) {
        if (!blocked || parallel)
          ctx.create(
            podRt,
            ns,
            podFromTemplate(spec['template'], sts, ctx.ownerRef(sts), `${name}-${i}`, {
              'controller-revision-hash': revision,
              'statefulset.kubernetes.io/pod-name': `${name}-${i}`,
              'apps.kubernetes.io/pod-index': str(i),
            }),
          );
        blocked = true;
        continue;
      }
      if (!isPodReady(p)) blocked = true;
    }
    for (const [i, p] of byOrdinal) if (i >= desired) ctx.delete(podRt, p);
    // Rolling update: when every pod is ready, replace the highest-ordinal outdated one.
    const inRange = [...byOrdinal].filter(([i]) => i < desired);
    if (!blocked && inRange.length === desired) {
      const outdated = inRange.filter(([, p]) => rev(p) !== revision).sort(([a], [b]) => b - a)[0];
      if (outdated) ctx.delete(podRt, outdated[1]);
    }
    const ready = inRange.filter(([, p]) => isPodReady(p)).length;
    const updated = inRange.filter(([, p]) => rev(p) === revision).length;
    const prev = (sts['status'] ?? {}) as JsonObject;
    const done = updated === desired && ready === desired;
    const currentRevision = done || !prev['currentRevision'] ? revision : str(prev['currentRevision']);
    const current = inRange.filter(([, p]) => rev(p) === currentRevision).length;
    const status: JsonObject = {
      observedGeneration: m['generation'],
      replicas: inRange.length,
      readyReplicas: ready,
      currentReplicas: current,
      updatedReplicas: updated,
      availableReplicas: ready,
      currentRevision,
      updateRevision: revision,
      collisionCount: 0,
    };
    for (const k of ['readyReplicas', 'currentReplicas', 'updatedReplicas'])
      if (status[k] === 0) delete status[k];
    ctx.writeStatus(rt, sts, status);
  }
}

/** DaemonSets: one simulated node, so one pod, replaced when the template changes. */
export function reconcileDaemonSets(ctx: ControllerContext): void {
  const rt = ctx.rt('apps', 'daemonsets');
  const podRt = ctx.rt('', 'pods');
  const allPods = ctx.list('', 'pods');
  for (const ds of ctx.list('apps', 'daemonsets')) {
    if (isTerminating(ds)) continue;
    const m = ds['metadata'] as JsonObject;
    const spec = (ds['spec'] ?? {}) as JsonObject;
    const hash = templateHash(spec['template']);
    const pods = podsOf(ctx, ds, allPods);
    const current = pods.filter(
      (p) => getPath(p, ['metadata', 'labels', 'controller-revision-hash']) === hash,
    );
    for (const p of pods) if (!current.includes(p)) ctx.delete(podRt, p);
    if (current.length === 0)
      ctx.create(
        podRt,
        str(m['namespace']),
        podFromTemplate(spec['template'], ds, ctx.ownerRef(ds), `${str(m['name'])}-${ctx.suffix()}`, {
          'controller-revision-hash': hash,
          'pod-template-generation': str(m['generation'] ?? 1),
        }),
      );
    const ready = current.filter(isPodReady).length;
    const status: JsonObject = {
      currentNumberScheduled: pods.length,
      desiredNumberScheduled: 1,
      numberMisscheduled: 0,
      numberReady: ready,
      observedGeneration: m['generation'],
      updatedNumberScheduled: current.length,
      numberAvailable: ready,
      numberUnavailable: 1 - ready,
    };
    if (status['numberAvailable'] === 0) delete status['numberAvailable'];
    if (status['numberUnavailable'] === 0) delete status['numberUnavailable'];
    ctx.writeStatus(rt, ds, status);
  }
}

/**
 * Jobs: pods up to `parallelism` until `completions` succeed (Complete) or more than
 * `backoffLimit` fail (Failed, BackoffLimitExceeded). Pods fail when an image tag ends in `-fail`.
 */
export function reconcileJobs(ctx: ControllerContext): void {
  const rt = ctx.rt('batch', 'jobs');
  const podRt = ctx.rt('', 'pods');
  const allPods = ctx.list('', 'pods');
  for (const job of ctx.list('batch', 'jobs')) {
    if (isTerminating(job)) continue;
    const m = job['metadata'] as JsonObject;
    const spec = (job['spec'] ?? {}) as JsonObject;
    const prev = (job['status'] ?? {}) as JsonObject;
    const prevConds = prev['conditions'];
    const finished =
      Array.isArray(prevConds) &&
      prevConds.some(
        (c) => (c as JsonObject)['type'] === 'Complete' || (c as JsonObject)['type'] === 'Failed',
      );
    if (finished) continue;
    const now = ctx.now();
    if (spec['suspend'] === true) {
      ctx.writeStatus(rt, job, {
        ...prev,
        conditions: [
          condition(prevConds, 'Suspended', 'True', 'JobSuspended', 'Job suspended', now, false, false),
        ].map((c) => ({ ...c, lastProbeTime: now })),
      });
      continue;
    }
    const pods = podsOf(ctx, job, allPods);
    const succeeded = pods.filter((p) => podPhase(p) === 'Succeeded').length;
    const failed = pods.filter((p) => podPhase(p) === 'Failed').length;
    const active = pods.filter((p) => podPhase(p) !== 'Succeeded' && podPhase(p) !== 'Failed');
    const completions = num(spec['completions'], 1);
    const parallelism = num(spec['parallelism'], 1);
    const backoffLimit = num(spec['backoffLimit'], 6);
    const status: JsonObject = {
      startTime: prev['startTime'] ?? now,
      active: active.length,
      ready: active.filter(isPodReady).length,
      terminating: 0,
      uncountedTerminatedPods: {},
      succeeded,
      failed,
    };
    if (failed > backoffLimit) {
      for (const p of active) ctx.delete(podRt, p);
      const msg = 'Job has reached the specified backoff limit';
      status['active'] = 0;
      status['conditions'] = [
        condition(prevConds, 'FailureTarget', 'True', 'BackoffLimitExceeded', msg, now, false),
        condition(prevConds, 'Failed', 'True', 'BackoffLimitExceeded', msg, now, false),
      ].map((c) => ({ ...c, lastProbeTime: now }));
    } else if (succeeded >= completions) {
      const msg = 'Reached expected number of succeeded pods';
      status['active'] = 0;
      status['completionTime'] = now;
      status['conditions'] = [
        condition(prevConds, 'SuccessCriteriaMet', 'True', 'CompletionsReached', msg, now, false),
        condition(prevConds, 'Complete', 'True', 'CompletionsReached', msg, now, false),
      ].map((c) => ({ ...c, lastProbeTime: now }));
    } else {
      const want = Math.min(parallelism, completions - succeeded) - active.length;
      for (let i = 0; i < want; i++)
        ctx.create(
          podRt,
          str(m['namespace']),
          podFromTemplate(spec['template'], job, ctx.ownerRef(job), `${str(m['name'])}-${ctx.suffix()}`),
        );
    }
    for (const k of ['succeeded', 'failed', 'active']) if (status[k] === 0) delete status[k];
    ctx.writeStatus(rt, job, status);
  }
}
