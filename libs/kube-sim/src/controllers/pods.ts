import { getPath, isObject, type JsonObject, str } from '../json.js';
import { type ControllerContext, NODE_NAME } from './controller-context.js';

/**
 * Failure injection by image tag (documented in the README and CLI.md):
 * `-unready` never becomes ready, `-crashloop` restarts forever (CrashLoopBackOff), `-fail` exits 1
 * (a Job's pods fail; other pods crash-loop).
 */
export type PodBehaviour = 'ok' | 'unready' | 'crashloop' | 'fail';

function tagOf(image: string): string {
  const name = image.split('@')[0] ?? '';
  const last = name.slice(name.lastIndexOf('/') + 1);
  const i = last.indexOf(':');
  return i >= 0 ? last.slice(i + 1) : '';
}

function containers(spec: unknown): JsonObject[] {
  const cs = getPath(spec, ['containers']);
  return Array.isArray(cs) ? cs.filter(isObject) : [];
}

export function behaviourOf(podSpec: unknown): PodBehaviour {
  const tags = containers(podSpec).map((c) => tagOf(str(c['image'] ?? '')));
  if (tags.some((t) => t.endsWith('-crashloop'))) return 'crashloop';
  if (tags.some((t) => t.endsWith('-fail'))) return 'fail';
  if (tags.some((t) => t.endsWith('-unready'))) return 'unready';
  return 'ok';
}

export function isPodReady(pod: JsonObject): boolean {
  const conds = getPath(pod, ['status', 'conditions']);
  return (
    Array.isArray(conds) && conds.some((c) => isObject(c) && c['type'] === 'Ready' && c['status'] === 'True')
  );
}

export function podPhase(pod: JsonObject): string {
  return str(getPath(pod, ['status', 'phase']) ?? 'Pending');
}

export function isTerminating(o: JsonObject): boolean {
  return getPath(o, ['metadata', 'deletionTimestamp']) !== undefined;
}

/** Crash-looping containers restart with a back-off of 10 s, doubling up to 5 min (simulated clock). */
function backoffMs(restarts: number): number {
  return Math.min(10_000 * 2 ** Math.max(0, restarts - 1), 300_000);
}

let ipCounter = 2;

/**
 * Moves pods through their lives: scheduling onto the one simulated node, then Running and Ready
 * (or the injected failure), Job pods and other run-to-completion pods to Succeeded/Failed. At most one pod per owner becomes
 * ready per pass, so rollouts are visible step by step.
 */
export function reconcilePods(ctx: ControllerContext): void {
  const rt = ctx.rt('', 'pods');
  const progressedOwners = new Set<string>();
  for (const pod of ctx.list('', 'pods')) {
    if (isTerminating(pod)) continue;
    const spec = (pod['spec'] ?? {}) as JsonObject;
    const phase = podPhase(pod);
    if (phase === 'Succeeded' || phase === 'Failed') continue;
    const ownerUid = str(getPath(pod, ['metadata', 'ownerReferences', '0', 'uid']) ?? '');
    const refs = getPath(pod, ['metadata', 'ownerReferences']);
    const owner = Array.isArray(refs) && isObject(refs[0]) ? str(refs[0]['uid']) : ownerUid;
    const behaviour = behaviourOf(spec);
    const now = ctx.now();
    if (!spec['nodeName']) {
      ctx.update(rt, { ...pod, spec: { ...spec, nodeName: NODE_NAME } }, 'kube-scheduler');
      continue;
    }
    const status = (pod['status'] ?? {}) as JsonObject;
    const isJob = getPath(pod, ['metadata', 'labels', 'batch.kubernetes.io/job-name']) !== undefined;
    if (phase === 'Pending') {
      if (owner && progressedOwners.has(owner)) {
        ctx.wakeIn(0);
        continue;
      }
      progressedOwners.add(owner);
      const ready = behaviour === 'ok';
      ctx.writeStatus(rt, pod, runningStatus(spec, status, now, ready, behaviour, 0));
      continue;
    }
    // Running. A pod that is not restarted when it exits (a Job's, or a bare hook pod with
    // restartPolicy Never/OnFailure) runs to completion; only `Always` pods serve forever.
    const runsToCompletion =
      isJob || spec['restartPolicy'] === 'Never' || spec['restartPolicy'] === 'OnFailure';
    if (runsToCompletion && behaviour === 'ok') {
      ctx.writeStatus(rt, pod, finishedStatus(spec, status, now, 0));
    } else if (behaviour === 'fail' && (isJob || spec['restartPolicy'] === 'Never')) {
      ctx.writeStatus(rt, pod, finishedStatus(spec, status, now, 1));
    } else if (behaviour === 'crashloop' || behaviour === 'fail') {
      const cs = getPath(status, ['containerStatuses', '0']);
      const restarts = isObject(cs) ? Number(cs['restartCount'] ?? 0) : 0;
      const since = Date.parse(
        str(
          getPath(status, ['containerStatuses', '0', 'lastState', 'terminated', 'finishedAt']) ??
            status['startTime'] ??
            now,
        ),
      );
      const due = since + backoffMs(restarts + 1);
      if (ctx.nowMs() >= due)
        ctx.writeStatus(rt, pod, runningStatus(spec, status, now, false, behaviour, restarts + 1));
      else ctx.wakeIn(Math.min(due - ctx.nowMs(), 5_000));
    }
  }
}

function podConditions(now: string, ready: boolean, previous: unknown): JsonObject[] {
  const prevTime = (type: string, status: string): string => {
    const p: unknown = Array.isArray(previous)
      ? (previous as unknown[]).find((c) => isObject(c) && c['type'] === type)
      : undefined;
    return isObject(p) && p['status'] === status && typeof p['lastTransitionTime'] === 'string'
      ? p['lastTransitionTime']
      : now;
  };
  const r = ready ? 'True' : 'False';
  const cond = (type: string, status: string, extra: JsonObject = {}): JsonObject => ({
    type,
    status,
    lastProbeTime: null,
    lastTransitionTime: prevTime(type, status),
    ...extra,
  });
  const notReady = ready
    ? {}
    : { reason: 'ContainersNotReady', message: 'containers with unready status: [app]' };
  return [
    cond('PodReadyToStartContainers', 'True'),
    cond('Initialized', 'True'),
    cond('Ready', r, notReady),
    cond('ContainersReady', r, notReady),
    cond('PodScheduled', 'True'),
  ];
}

function runningStatus(
  spec: JsonObject,
  prev: JsonObject,
  now: string,
  ready: boolean,
  behaviour: string,
  restarts: number,
): JsonObject {
  const ip = typeof prev['podIP'] === 'string' ? prev['podIP'] : `10.244.0.${(ipCounter++ % 250) + 2}`;
  const startTime = typeof prev['startTime'] === 'string' ? prev['startTime'] : now;
  const crash = behaviour === 'crashloop' || (behaviour === 'fail' && restarts > 0);
  const statuses = containers(spec).map((c) => {
    const s: JsonObject = {
      name: c['name'],
      image: c['image'],
      imageID: `docker.io/library/${str(c['image'])}@sha256:${'0'.repeat(64)}`,
      containerID: `containerd://${str(c['name'])}${restarts}`,
      ready,
      started: !crash,
      // A crash-looping container has crashed at least once by the time it is seen waiting.
      restartCount: crash ? Math.max(1, restarts) : 0,
      state: crash
        ? {
            waiting: {
              reason: 'CrashLoopBackOff',
              message: `back-off restarting failed container ${str(c['name'])}`,
            },
          }
        : { running: { startedAt: startTime } },
    };
    if (crash)
      s['lastState'] = {
        terminated: {
          exitCode: 1,
          reason: 'Error',
          startedAt: now,
          finishedAt: now,
          containerID: `containerd://${str(c['name'])}${restarts}`,
        },
      };
    return s;
  });
  const notReadyNames = ready ? [] : statuses.map((s) => str(s['name']));
  const conds = podConditions(now, ready, prev['conditions']).map((c) =>
    c['reason'] === 'ContainersNotReady'
      ? { ...c, message: `containers with unready status: [${notReadyNames.join(' ')}]` }
      : c,
  );
  return {
    phase: 'Running',
    conditions: conds,
    hostIP: '172.18.0.2',
    hostIPs: [{ ip: '172.18.0.2' }],
    podIP: ip,
    podIPs: [{ ip }],
    startTime,
    containerStatuses: statuses,
    qosClass: prev['qosClass'] ?? 'BestEffort',
  };
}

function finishedStatus(spec: JsonObject, prev: JsonObject, now: string, exitCode: number): JsonObject {
  const startTime = typeof prev['startTime'] === 'string' ? prev['startTime'] : now;
  return {
    ...prev,
    phase: exitCode === 0 ? 'Succeeded' : 'Failed',
    conditions: podConditions(now, false, prev['conditions']).map((c) =>
      c['type'] === 'Ready' || c['type'] === 'ContainersReady'
        ? { ...c, reason: 'PodCompleted', message: undefined }
        : c,
    ),
    containerStatuses: containers(spec).map((c) => ({
      name: c['name'],
      image: c['image'],
      imageID: `docker.io/library/${str(c['image'])}@sha256:${'0'.repeat(64)}`,
      ready: false,
      started: false,
      restartCount: 0,
      state: {
        terminated: {
          exitCode,
          reason: exitCode === 0 ? 'Completed' : 'Error',
          startedAt: startTime,
          finishedAt: now,
        },
      },
    })),
  };
}

/** A pod for `template`, owned by `owner`, named `name`. */
export function podFromTemplate(
  template: unknown,
  owner: JsonObject,
  ownerRef: JsonObject,
  name: string,
  extraLabels: Record<string, string> = {},
): JsonObject {
  const t = isObject(template) ? template : {};
  const tm = isObject(t['metadata']) ? t['metadata'] : {};
  const labels = { ...((tm['labels'] ?? {}) as Record<string, string>), ...extraLabels };
  const metadata: JsonObject = { name, labels, ownerReferences: [ownerRef] };
  if (isObject(tm['annotations'])) metadata['annotations'] = tm['annotations'];
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata,
    spec: structuredClone(t['spec'] ?? {}),
    ...(owner ? {} : {}),
  };
}
