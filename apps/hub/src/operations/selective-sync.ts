// The objects a selective sync names, checked against the bundle the target's agent runs.
import { groupOf, type KubeObject, type ObjectRef } from '@flotilla/contract';
import { HubError } from '../common/hub-error.js';

/**
 * Each named object as the agent matches it (a namespaced object named without a namespace is in the
 * target's). A hook or an object the bundle does not declare is refused, naming it.
 */
export function declaredRefs(
  manifests: readonly KubeObject[],
  digest: string,
  namespace: string,
  refs: ObjectRef[],
): ObjectRef[] {
  return refs.map((ref, i) => {
    const found = manifests.find(
      (m) =>
        groupOf(m.apiVersion) === ref.group &&
        m.kind === ref.kind &&
        m.metadata.name === ref.name &&
        (ref.namespace === undefined || (m.metadata.namespace ?? namespace) === ref.namespace),
    );
    const named = `${ref.group}/${ref.kind}/${ref.namespace ?? ''}/${ref.name}`;
    if (!found)
      throw new HubError(
        422,
        'resource-not-declared',
        `${named} is not declared by the bundle the target runs (${digest.slice(0, 19)}): a selective sync applies only declared objects`,
        `resources[${i}]`,
      );
    const annotations = found.metadata.annotations ?? {};
    if (
      annotations['argocd.argoproj.io/hook'] ||
      annotations['helm.sh/hook'] ||
      annotations['flotilla.dev/hook']
    )
      throw new HubError(
        422,
        'resource-is-hook',
        `${named} is a hook: hooks do not run in a selective sync (as in Argo CD); sync the whole target`,
        `resources[${i}]`,
      );
    // Namespaced objects carry their namespace, so the agent matches what it applies.
    const ns =
      ref.namespace ?? found.metadata.namespace ?? (isClusterScopedGuess(found) ? undefined : namespace);
    return { group: ref.group, kind: ref.kind, ...(ns ? { namespace: ns } : {}), name: ref.name };
  });
}

/** Kinds that are never namespaced, for a manifest that names no namespace. */
function isClusterScopedGuess(m: KubeObject): boolean {
  return [
    'Namespace',
    'CustomResourceDefinition',
    'ClusterRole',
    'ClusterRoleBinding',
    'PersistentVolume',
    'StorageClass',
    'PriorityClass',
    'IngressClass',
    'ValidatingWebhookConfiguration',
    'MutatingWebhookConfiguration',
    'APIService',
  ].includes(m.kind);
}
