import type { NotificationTrigger } from '@flotilla/fleet-config';

/** An audit event as the dispatcher reads it. */
export interface AuditRecord {
  id: bigint;
  at: Date;
  actor: string;
  action: string;
  scope: string;
  details: Record<string, unknown>;
}

/** One trigger an audit event fires, before it is matched against policies. */
export interface TriggerHit {
  trigger: NotificationTrigger;
  /**
   * Fires at most once per key, whatever the policy (`oncePer`): `deployed` once per target and
   * revision, a rollout step once however many batches release its clusters.
   */
  oncePer?: string;
  /**
   * Hits of one trigger about one target are digested per appset; the others (a halt, a rollback,
   * break-glass, a refusal) are one message each, save a rollout's progress (below).
   */
  perTarget: boolean;
  /**
   * A rollout's own progress (started, a step started or completed, completed): the hits of one
   * rollout recorded within a policy's digest window are one message, so a rollout in N steps tells
   * at most N + 1 times (a step completing and the next starting happen in the same tick).
   */
  rolloutProgress?: true;
  message: string;
}

const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

/** `target:web-eu-1` → ['target', 'web-eu-1']. */
export function splitScope(scope: string): [string, string] {
  const i = scope.indexOf(':');
  return i < 0 ? [scope, ''] : [scope.slice(0, i), scope.slice(i + 1)];
}

/**
 * The triggers one audit event fires. Every notification starts as an audit event, so what is told
 * is what is recorded, and the audit log's order (id order is commit order under its chain lock) is
 * the order events are matched in.
 */
export function triggersOf(e: AuditRecord): TriggerHit[] {
  const d = e.details;
  const [kind, name] = splitScope(e.scope);
  const revision = str(d['revision']);
  switch (e.action) {
    case 'sync.succeeded':
      return [
        { trigger: 'sync-succeeded', perTarget: true, message: `synced ${short(revision)}` },
        {
          trigger: 'deployed',
          perTarget: true,
          oncePer: `deployed/${name}/${revision ?? ''}`,
          message: `deployed ${short(revision)}`,
        },
      ];
    case 'target.sync-requested':
      // Agents report a sync when it is done; what runs before that is an operation someone asked
      // for (a manual or batch sync), handed to the agent in its assignments.
      return d['dryRun'] === true
        ? []
        : [
            {
              trigger: 'sync-running',
              perTarget: true,
              message: `sync requested by ${e.actor}: ${str(d['reason']) ?? ''}`.trim(),
            },
          ];
    case 'sync.blocked':
      // The agent reports a held sync once per bundle: a window (or break-glass) holds the revision.
      return [
        {
          trigger: 'window-held',
          perTarget: true,
          oncePer: `window-held/${name}/${revision ?? ''}`,
          message: `${short(revision)} held: ${str(d['message']) ?? ''}`.trim(),
        },
      ];
    case 'sync.failed':
    case 'sync.partial':
      return [
        {
          trigger: 'sync-failed',
          perTarget: true,
          message: `sync ${e.action.slice(5)} at ${short(revision)}: ${str(d['message']) ?? ''}`.trim(),
        },
      ];
    case 'health.changed':
      return d['to'] === 'Degraded' && d['from'] !== 'Degraded'
        ? [
            {
              trigger: 'health-degraded',
              perTarget: true,
              message: `Degraded: ${str(d['message']) ?? ''}`.trim(),
            },
          ]
        : [];
    case 'drift.detected':
      return [{ trigger: 'drift-detected', perTarget: true, message: driftMessage('drift detected', d) }];
    case 'drift.healed':
      return [{ trigger: 'healed', perTarget: true, message: driftMessage('drift healed', d) }];
    case 'drift.contested':
      return [{ trigger: 'contested', perTarget: true, message: driftMessage('contested', d) }];
    case 'rollout.started':
      return [
        {
          trigger: 'rollout-started',
          perTarget: false,
          rolloutProgress: true,
          message: `rollout of ${short(revision)} started`,
        },
      ];
    case 'rollout.released': {
      // A step may release its clusters in several batches (maxUnavailable): the first one starts it.
      const step = typeof d['step'] === 'number' ? d['step'] : 0;
      const targets = Array.isArray(d['targets']) ? d['targets'].length : 0;
      return [
        {
          trigger: 'rollout-step-started',
          perTarget: false,
          rolloutProgress: true,
          oncePer: `rollout-step/${name}/${revision ?? ''}/${step}`,
          message: `step ${step + 1} of the rollout of ${short(revision)} started (${targets} target(s) released)`,
        },
      ];
    }
    case 'rollout.step-completed': {
      const healthy = Array.isArray(d['healthy']) ? d['healthy'].length : 0;
      const step = str(d['step']) ?? (typeof d['index'] === 'number' ? String(d['index'] + 1) : '');
      return [
        {
          trigger: 'rollout-step-completed',
          perTarget: false,
          rolloutProgress: true,
          message: `step ${step} of the rollout of ${short(revision)} completed: ${healthy} cluster(s) healthy`,
        },
      ];
    }
    case 'rollout.halted':
      return [
        {
          trigger: 'rollout-halted',
          perTarget: false,
          message: `rollout of ${short(revision)} halted: ${str(d['message']) ?? ''}`.trim(),
        },
      ];
    case 'rollout.completed':
      return [
        {
          trigger: 'rollout-completed',
          perTarget: false,
          rolloutProgress: true,
          message: `rollout of ${short(revision)} completed`,
        },
      ];
    case 'revision.failed':
      return [
        {
          trigger: 'automatic-rollback',
          perTarget: false,
          message:
            `${str(d['target']) ?? 'a target'} rolled back from ${short(revision)}: ${str(d['reason']) ?? ''}`.trim(),
        },
      ];
    case 'fleet.deletion-held':
    case 'appset.expansion-held':
      return [
        {
          trigger: 'deletion-guard-held',
          perTarget: false,
          message: `the deletion guard holds a change of ${kind} ${name}: confirm it to apply`,
        },
      ];
    case 'break-glass.opened':
    case 'break-glass.closed':
    case 'break-glass.expired': {
      const what = e.action.slice('break-glass.'.length) as 'opened' | 'closed' | 'expired';
      // The hub records the count (break-glass.service); an array is counted too.
      const recorded = d['manualChanges'];
      const changes = typeof recorded === 'number' ? recorded : Array.isArray(recorded) ? recorded.length : 0;
      return [
        {
          trigger: `break-glass-${what}`,
          perTarget: false,
          message:
            what === 'opened'
              ? `break-glass opened on ${kind} ${name} by ${e.actor}: ${str(d['reason']) ?? ''}`.trim()
              : `break-glass on ${kind} ${name} ${what}; ${changes} manual change(s) recorded`,
        },
      ];
    }
    case 'cluster.offline':
      return [
        {
          trigger: 'agent-offline',
          perTarget: false,
          message: `the agent of cluster ${name} has not been seen since ${str(d['lastSeenAt']) ?? 'ever'}`,
        },
      ];
    case 'fleet.rejected':
      return [
        {
          trigger: 'policy-refused',
          perTarget: false,
          message:
            `fleet commit ${short(str(d['commit']))} refused: ${str(d['message']) ?? str(d['code']) ?? ''}`.trim(),
        },
      ];
    default:
      return [];
  }
}

function short(revision: string | undefined): string {
  return revision ? revision.slice(0, 12) : '(unknown revision)';
}

function driftMessage(what: string, d: Record<string, unknown>): string {
  const r = d['resource'] as Record<string, unknown> | undefined;
  const obj = r ? `${str(r['kind']) ?? ''} ${str(r['namespace']) ?? ''}/${str(r['name']) ?? ''}` : '';
  return `${what}${obj ? ` on ${obj.trim()}` : ''}`;
}
