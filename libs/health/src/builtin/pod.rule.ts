import { conditions, field, findCondition, int, isRecord, list, str } from '../object-fields.js';
import { type BuiltinRule, quote, result, unsupportedVersion } from './rule.js';

const IGNORE_RESTART_POLICY = 'argocd.argoproj.io/ignore-restart-policy';
const HOOK_ANNOTATIONS = ['argocd.argoproj.io/hook', 'helm.sh/hook'];

/** Waiting reasons that mean the container cannot start on its own (CrashLoopBackOff, ImagePullBackOff, ErrImagePull…). */
function isStuckWaitingReason(reason: string): boolean {
  return reason.startsWith('Err') || reason.endsWith('Error') || reason.endsWith('BackOff');
}

function failMessage(container: unknown): string {
  const terminated = field(container, 'state', 'terminated');
  if (!isRecord(terminated)) return '';
  const message = str(terminated, 'message');
  if (message !== '') return message;
  if (str(terminated, 'reason') === 'OOMKilled') return 'OOMKilled';
  const exitCode = int(terminated, 'exitCode');
  if (exitCode !== 0) return `container ${quote(str(container, 'name'))} failed with exit code ${exitCode}`;
  return '';
}

/**
 * Argo CD's Pod check. Pods with restartPolicy Never/OnFailure are usually sync hooks, so they stay Progressing
 * while they run and image-pull errors do not fail them early; the ignore-restart-policy annotation opts a
 * non-hook pod into the long-running semantics.
 */
export const podHealth: BuiltinRule = (obj, gvk) => {
  if (gvk.group !== '' || gvk.version !== 'v1') return unsupportedVersion(gvk, 'Pod');
  const annotations = field(obj, 'metadata', 'annotations');
  const isHook = HOOK_ANNOTATIONS.some((a) => isRecord(annotations) && a in annotations);
  const ignoreRestartPolicy = !isHook && isRecord(annotations) && IGNORE_RESTART_POLICY in annotations;
  const restartPolicy = str(obj, 'spec', 'restartPolicy');
  const longRunning = restartPolicy === 'Always' || ignoreRestartPolicy;
  const podMessage = str(obj, 'status', 'message');
  const containerStatuses = list(obj, 'status', 'containerStatuses');

  if (longRunning) {
    const stuck = containerStatuses.filter((c) => {
      const waiting = field(c, 'state', 'waiting');
      return isRecord(waiting) && isStuckWaitingReason(str(waiting, 'reason'));
    });
    if (stuck.length > 0) {
      return result('Degraded', stuck.map((c) => str(c, 'state', 'waiting', 'message')).join(', '));
    }
  }

  switch (str(obj, 'status', 'phase')) {
    case 'Pending':
      return result('Progressing', podMessage);
    case 'Succeeded':
      return result('Healthy', podMessage);
    case 'Failed': {
      if (podMessage !== '') return result('Degraded', podMessage);
      for (const container of [...list(obj, 'status', 'initContainerStatuses'), ...containerStatuses]) {
        const message = failMessage(container);
        if (message !== '') return result('Degraded', message);
      }
      return result('Degraded', '');
    }
    case 'Running': {
      if (longRunning) {
        if (findCondition(conditions(obj), 'Ready')?.status === 'True') return result('Healthy', podMessage);
        const restarted = containerStatuses.some((c) => isRecord(field(c, 'lastState', 'terminated')));
        return result(restarted ? 'Degraded' : 'Progressing', podMessage);
      }
      if (restartPolicy === 'Never' || restartPolicy === 'OnFailure')
        return result('Progressing', podMessage);
      break;
    }
  }
  return result('Unknown', podMessage);
};
