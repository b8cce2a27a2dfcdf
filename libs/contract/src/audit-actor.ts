/**
 * Who did something, as the audit log, history and pins name it: one kind, a colon, and the name
 * the kind proves.
 *
 * | kind      | who                                                                  |
 * | --------- | -------------------------------------------------------------------- |
 * | `user`    | a person: an OIDC subject, or whoever holds the shared admin token    |
 * | `token`   | an API token, by its name                                            |
 * | `agent`   | a cluster's agent, by the cluster's name                             |
 * | `git`     | a commit's author (the fleet repository applied)                     |
 * | `manager` | a field manager that changed a live object (kubectl, a controller)   |
 * | `system`  | the hub's own job (`system:expansion`, `system:retention`, …)        |
 */
export const AUDIT_ACTOR_KINDS = ['user', 'token', 'agent', 'git', 'manager', 'system'] as const;
export type AuditActorKind = (typeof AUDIT_ACTOR_KINDS)[number];
export type AuditActor = `${AuditActorKind}:${string}`;

/** The hub's own work, named by its job, so "the hub did it" still says which part and why. */
export type SystemJob =
  | 'config'
  | 'expansion'
  | 'rollouts'
  | 'automatic-rollback'
  | 'policy-gate'
  | 'source-verification'
  | 'fleet-repo'
  | 'render'
  | 'retention'
  | 'repository-poll'
  | 'agent-offline-sweep'
  | 'pin-expiry'
  | 'pin-lifting'
  | 'break-glass-expiry';

export function systemActor(job: SystemJob): AuditActor {
  return `system:${job}`;
}

const ACTOR = new RegExp(`^(${AUDIT_ACTOR_KINDS.join('|')}):.+$`, 's');

/** Whether `value` names an actor the one way (what a filter or an old row is checked against). */
export function isAuditActor(value: string): value is AuditActor {
  return ACTOR.test(value);
}
