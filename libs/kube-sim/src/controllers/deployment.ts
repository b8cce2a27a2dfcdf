import { getPath, isObject, type JsonObject } from '../json.js';
import { condition, type ControllerContext, intOrPercent, num, templateHash } from './controller-context.js';
import { isPodReady, isTerminating, podFromTemplate } from './pods.js';

const REVISION = 'deployment.kubernetes.io/revision';

function labelsOf(o: JsonObject): Record<string, string> {
  return (getPath(o, ['metadata', 'labels']) ?? {}) as Record<string, string>;
}

function revisionOf(o: JsonObject): number {
  return Number(getPath(o, ['metadata', 'annotations', REVISION]) ?? 0);
}

/** ReplicaSets keep their pod count at spec.replicas and report ready/available counts. */
export function reconcileReplicaSets(ctx: ControllerContext): void {
  const rsRt = ctx.rt('apps', 'replicasets');
  const podRt = ctx.rt('', 'pods');
  const allPods = ctx.list('', 'pods');
  for (const rs of ctx.list('apps', 'replicasets')) {
    if (isTerminating(rs)) continue;
    const ns = String(getPath(rs, ['metadata', 'namespace']));
    const pods = ctx.ownedBy(allPods, rs).filter((p) => !isTerminating(p));
    const want = num(getPath(rs, ['spec', 'replicas']), 1);
    if (pods.length < want) {
      const name = String(getPath(rs, ['metadata', 'name']));
      for (let i = pods.length; i < want; i++)
        ctx.create(
          podRt,
          ns,
          podFromTemplate(getPath(rs, ['spec', 'template']), rs, ctx.ownerRef(rs), `${name}-${ctx.suffix()}`),
        );
    } else if (pods.length > want) {
      // Not-ready pods go first, then the newest.
      const victims = [...pods]
        .sort(
          (a, b) =>
            Number(isPodReady(a)) - Number(isPodReady(b)) ||
            String(getPath(b, ['metadata', 'creationTimestamp'])).localeCompare(
              String(getPath(a, ['metadata', 'creationTimestamp'])),
            ),
        )
        .slice(0, pods.length - want);
      for (const p of victims) ctx.delete(podRt, p);
    }
    const live = pods.slice(0, Math.max(want, 0)).length === pods.length ? pods : pods;
    const ready = live.filter(isPodReady).length;
    const status: JsonObject = {
      replicas: Math.min(live.length, Math.max(want, live.length)),
      fullyLabeledReplicas: live.length,
      readyReplicas: ready,
      availableReplicas: ready,
      observedGeneration: getPath(rs, ['metadata', 'generation']),
    };
    for (const k of ['readyReplicas', 'availableReplicas', 'fullyLabeledReplicas'])
      if (status[k] === 0) delete status[k];
    ctx.writeStatus(rsRt, rs, status);
  }
}

/**
 * Deployments: a ReplicaSet per pod template (named `<deploy>-<pod-template-hash>`), old ones
 * scaled down as the new one becomes available, status and conditions as kstatus and
 * `kubectl rollout status` read them, ProgressDeadlineExceeded after progressDeadlineSeconds.
 * The revision annotation is written through /status, so it never bumps generation.
 */
export function reconcileDeployments(ctx: ControllerContext): void {
  const dRt = ctx.rt('apps', 'deployments');
  const rsRt = ctx.rt('apps', 'replicasets');
  const allRs = ctx.list('apps', 'replicasets');
  for (const d of ctx.list('apps', 'deployments')) {
    if (isTerminating(d)) continue;
    const m = d['metadata'] as JsonObject;
    const spec = (d['spec'] ?? {}) as JsonObject;
    const ns = String(m['namespace']);
    const name = String(m['name']);
    const desired = num(spec['replicas'], 1);
    const owned = ctx.ownedBy(allRs, d).filter((rs) => !isTerminating(rs));
    const hash = templateHash(spec['template']);
    let newRs = owned.find((rs) => labelsOf(rs)['pod-template-hash'] === hash);
    const maxRevision = owned.reduce((mx, rs) => Math.max(mx, revisionOf(rs)), 0);
    let created = false;
    const paused = spec['paused'] === true;
    if (!newRs && !paused) {
      const template = structuredClone((spec['template'] ?? {}) as JsonObject);
      const tm = isObject(template['metadata']) ? template['metadata'] : (template['metadata'] = {});
      tm['labels'] = { ...((tm['labels'] ?? {}) as Record<string, string>), 'pod-template-hash': hash };
      const selector = structuredClone((spec['selector'] ?? {}) as JsonObject);
      selector['matchLabels'] = {
        ...((selector['matchLabels'] ?? {}) as Record<string, string>),
        'pod-template-hash': hash,
      };
      const surge = intOrPercent(getPath(spec, ['strategy', 'rollingUpdate', 'maxSurge']), desired, true);
      newRs = ctx.create(rsRt, ns, {
        apiVersion: 'apps/v1',
        kind: 'ReplicaSet',
        metadata: {
          name: `${name}-${hash}`,
          labels: {
            ...((getPath(spec, ['template', 'metadata', 'labels']) ?? {}) as Record<string, string>),
            'pod-template-hash': hash,
          },
          annotations: {
            'deployment.kubernetes.io/desired-replicas': String(desired),
            'deployment.kubernetes.io/max-replicas': String(desired + surge),
            [REVISION]: String(maxRevision + 1),
          },
          ownerReferences: [ctx.ownerRef(d)],
        },
        spec: { replicas: desired, minReadySeconds: spec['minReadySeconds'] ?? 0, selector, template },
      });
      created = newRs !== undefined;
      if (!newRs) continue;
    } else if (newRs && !paused) {
      const rsAnn = (getPath(newRs, ['metadata', 'annotations']) ?? {}) as Record<string, string>;
      const olderHigher = owned.some((rs) => rs !== newRs && revisionOf(rs) > revisionOf(newRs!));
      const patchAnn: Record<string, string> = {
        ...rsAnn,
        'deployment.kubernetes.io/desired-replicas': String(desired),
      };
      if (olderHigher) patchAnn[REVISION] = String(maxRevision + 1);
      if (
        num(getPath(newRs, ['spec', 'replicas'])) !== desired ||
        JSON.stringify(patchAnn) !== JSON.stringify(rsAnn)
      ) {
        const nm = newRs['metadata'] as JsonObject;
        const updated = ctx.update(rsRt, {
          ...newRs,
          metadata: { ...nm, annotations: patchAnn },
          spec: { ...(newRs['spec'] as JsonObject), replicas: desired },
        });
        if (updated) newRs = updated;
      }
    }
    const olds = owned.filter((rs) => rs !== newRs && labelsOf(rs)['pod-template-hash'] !== hash);
    const newAvailable = newRs ? num(getPath(newRs, ['status', 'availableReplicas'])) : 0;
    if (!paused) {
      let remaining = Math.max(0, desired - newAvailable);
      if (getPath(spec, ['strategy', 'type']) === 'Recreate') remaining = 0;
      for (const rs of [...olds].sort((a, b) => revisionOf(b) - revisionOf(a))) {
        const cur = num(getPath(rs, ['spec', 'replicas']));
        const target = Math.min(cur, remaining);
        remaining -= target;
        if (target !== cur)
          ctx.update(rsRt, { ...rs, spec: { ...(rs['spec'] as JsonObject), replicas: target } });
      }
      // revisionHistoryLimit: scaled-down old ReplicaSets beyond the limit are deleted.
      const limit = num(spec['revisionHistoryLimit'], 10);
      const idle = olds.filter(
        (rs) =>
          num(getPath(rs, ['spec', 'replicas'])) === 0 && num(getPath(rs, ['status', 'replicas'])) === 0,
      );
      idle.sort((a, b) => revisionOf(a) - revisionOf(b));
      for (const rs of idle.slice(0, Math.max(0, idle.length - limit))) ctx.delete(rsRt, rs);
    }

    const all = newRs ? [newRs, ...olds] : olds;
    const sum = (path: string[]): number => all.reduce((s, rs) => s + num(getPath(rs, path)), 0);
    const replicas = sum(['status', 'replicas']);
    const ready = sum(['status', 'readyReplicas']);
    const available = sum(['status', 'availableReplicas']);
    const updated = newRs ? num(getPath(newRs, ['status', 'replicas'])) : 0;
    const unavailable = Math.max(0, desired - available);
    const now = ctx.now();
    const prev = (d['status'] ?? {}) as JsonObject;
    const prevConds = prev['conditions'];
    const maxUnavailable =
      getPath(spec, ['strategy', 'type']) === 'Recreate'
        ? 0
        : intOrPercent(getPath(spec, ['strategy', 'rollingUpdate', 'maxUnavailable']), desired, false);
    const availableCond =
      available >= desired - maxUnavailable
        ? condition(
            prevConds,
            'Available',
            'True',
            'MinimumReplicasAvailable',
            'Deployment has minimum availability.',
            now,
            true,
          )
        : condition(
            prevConds,
            'Available',
            'False',
            'MinimumReplicasUnavailable',
            'Deployment does not have minimum availability.',
            now,
            true,
          );
    const rsName = newRs ? String(getPath(newRs, ['metadata', 'name'])) : '';
    const complete =
      updated === desired &&
      replicas === desired &&
      available === desired &&
      num(getPath(newRs, ['status', 'observedGeneration'])) >=
        num(getPath(newRs, ['metadata', 'generation']));
    const progressed =
      replicas !== num(prev['replicas']) ||
      updated !== num(prev['updatedReplicas']) ||
      available !== num(prev['availableReplicas']) ||
      ready !== num(prev['readyReplicas']);
    const prevProgressing: unknown = Array.isArray(prevConds)
      ? (prevConds as unknown[]).find((c) => isObject(c) && c['type'] === 'Progressing')
      : undefined;
    const deadlineSeconds = spec['progressDeadlineSeconds'];
    let progressing: JsonObject;
    if (paused) {
      progressing = condition(
        prevConds,
        'Progressing',
        'Unknown' as 'True',
        'DeploymentPaused',
        'Deployment is paused',
        now,
        true,
      );
    } else if (complete) {
      progressing = condition(
        prevConds,
        'Progressing',
        'True',
        'NewReplicaSetAvailable',
        `ReplicaSet "${rsName}" has successfully progressed.`,
        now,
        true,
      );
    } else if (created || !prevProgressing) {
      progressing = condition(
        prevConds,
        'Progressing',
        'True',
        'NewReplicaSetCreated',
        `Created new replica set "${rsName}"`,
        now,
        true,
      );
    } else if (
      isObject(prevProgressing) &&
      prevProgressing['reason'] === 'ProgressDeadlineExceeded' &&
      !progressed &&
      num(prev['observedGeneration']) === num(m['generation'])
    ) {
      progressing = prevProgressing;
    } else {
      progressing = condition(
        prevConds,
        'Progressing',
        'True',
        'ReplicaSetUpdated',
        `ReplicaSet "${rsName}" is progressing.`,
        now,
        true,
        progressed,
      );
      if (typeof deadlineSeconds === 'number') {
        const last = Date.parse(String(progressing['lastUpdateTime']));
        const due = last + deadlineSeconds * 1000;
        if (ctx.nowMs() >= due)
          progressing = condition(
            prevConds,
            'Progressing',
            'False',
            'ProgressDeadlineExceeded',
            `ReplicaSet "${rsName}" has timed out progressing.`,
            now,
            true,
          );
        else ctx.wakeIn(Math.min(due - ctx.nowMs(), 5_000));
      }
    }
    const status: JsonObject = {
      observedGeneration: m['generation'],
      replicas,
      updatedReplicas: updated,
      readyReplicas: ready,
      availableReplicas: available,
      unavailableReplicas: unavailable,
      conditions: [availableCond, progressing],
    };
    for (const k of [
      'replicas',
      'updatedReplicas',
      'readyReplicas',
      'availableReplicas',
      'unavailableReplicas',
    ])
      if (status[k] === 0) delete status[k];
    const revision = newRs ? String(revisionOf(newRs)) : undefined;
    ctx.writeStatus(dRt, d, status, revision && revision !== '0' ? { [REVISION]: revision } : undefined);
  }
}
