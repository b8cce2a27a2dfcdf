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

/** What a rule reads off an event: its details, its scope's kind and name, and the revision it names. */
interface EventFacts {
  d: Record<string, unknown>;
  kind: string;
  name: string;
  revision: string | undefined;
}

/** The triggers an event of one action fires. */
type TriggerRule = (e: AuditRecord, f: EventFacts) => TriggerHit[];

const syncFailed: TriggerRule = (e, { d, revision }) => [
  {
    trigger: 'sync-failed',
    perTarget: true,
    message: `sync ${e.action.slice(5)} at ${short(revision)}: ${str(d['message']) ?? ''}`.trim(),
  },
];

/** What happens to one target: its syncs, its health, its drift (digested per appset). */
const TARGET_RULES: Record<string, TriggerRule> = {
  'sync.succeeded': (_e, { name, revision }) => [
    { trigger: 'sync-succeeded', perTarget: true, message: `synced ${short(revision)}` },
    {
      trigger: 'deployed',
      perTarget: true,
      oncePer: `deployed/${name}/${revision ?? ''}`,
      message: `deployed ${short(revision)}`,
    },
  ],
  // Agents report a sync when it is done; what runs before that is an operation someone asked
  // for (a manual or batch sync), handed to the agent in its assignments.
  'target.sync-requested': (e, { d }) =>
    d['dryRun'] === true
      ? []
      : [
          {
            trigger: 'sync-running',
            perTarget: true,
            message: `sync requested by ${e.actor}: ${str(d['reason']) ?? ''}`.trim(),
          },
        ],
  // The agent reports a held sync once per bundle: a window (or break-glass) holds the revision.
  'sync.blocked': (_e, { d, name, revision }) => [
    {
      trigger: 'window-held',
      perTarget: true,
      oncePer: `window-held/${name}/${revision ?? ''}`,
      message: `${short(revision)} held: ${str(d['message']) ?? ''}`.trim(),
    },
  ],
  'sync.failed': syncFailed,
  'sync.partial': syncFailed,
  'health.changed': (_e, { d }) =>
    d['to'] === 'Degraded' && d['from'] !== 'Degraded'
      ? [
          {
            trigger: 'health-degraded',
            perTarget: true,
            message: `Degraded: ${str(d['message']) ?? ''}`.trim(),
          },
        ]
      : [],
  'drift.detected': (_e, { d }) => [
    { trigger: 'drift-detected', perTarget: true, message: driftMessage('drift detected', d) },
  ],
  'drift.healed': (_e, { d }) => [
    { trigger: 'healed', perTarget: true, message: driftMessage('drift healed', d) },
  ],
  'drift.contested': (_e, { d }) => [
    { trigger: 'contested', perTarget: true, message: driftMessage('contested', d) },
  ],
  // An admission policy denies the revision's bundle here: the rollout holds the target at what it
  // ran. Recorded once per new denial (policy-gate.service), so a re-judged bundle is not news.
  'policy.denied': (_e, { d, revision }) => [
    {
      trigger: 'policy-refused',
      perTarget: true,
      message:
        `${short(revision)} denied by admission policy ${str(d['policy']) ?? ''}: ${str(d['message']) ?? ''}`.trim(),
    },
  ],
};

/** A rollout's progress and its end, and the automatic rollback of a failed revision. */
const ROLLOUT_RULES: Record<string, TriggerRule> = {
  'rollout.started': (_e, { revision }) => [
    {
      trigger: 'rollout-started',
      perTarget: false,
      rolloutProgress: true,
      message: `rollout of ${short(revision)} started`,
    },
  ],
  'rollout.released': (_e, { d, name, revision }) => {
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
  },
  'rollout.step-completed': (_e, { d, revision }) => {
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
  },
  'rollout.halted': (_e, { d, revision }) => [
    {
      trigger: 'rollout-halted',
      perTarget: false,
      message: `rollout of ${short(revision)} halted: ${str(d['message']) ?? ''}`.trim(),
    },
  ],
  'rollout.completed': (_e, { revision }) => [
    {
      trigger: 'rollout-completed',
      perTarget: false,
      rolloutProgress: true,
      message: `rollout of ${short(revision)} completed`,
    },
  ],
  'revision.failed': (_e, { d, revision }) => [
    {
      trigger: 'automatic-rollback',
      perTarget: false,
      message:
        `${str(d['target']) ?? 'a target'} rolled back from ${short(revision)}: ${str(d['reason']) ?? ''}`.trim(),
    },
  ],
};

const deletionHeld: TriggerRule = (_e, { kind, name }) => [
  {
    trigger: 'deletion-guard-held',
    perTarget: false,
    message: `the deletion guard holds a change of ${kind} ${name}: confirm it to apply`,
  },
];

const breakGlass: TriggerRule = (e, { d, kind, name }) => {
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
};

/** The fleet's guards speaking: the deletion guard, break-glass, an agent gone quiet, a refused fleet commit or signature. */
const FLEET_RULES: Record<string, TriggerRule> = {
  'fleet.deletion-held': deletionHeld,
  'appset.expansion-held': deletionHeld,
  'break-glass.opened': breakGlass,
  'break-glass.closed': breakGlass,
  'break-glass.expired': breakGlass,
  'cluster.offline': (_e, { d, name }) => [
    {
      trigger: 'agent-offline',
      perTarget: false,
      message: `the agent of cluster ${name} has not been seen since ${str(d['lastSeenAt']) ?? 'ever'}`,
    },
  ],
  'fleet.rejected': (_e, { d }) => [
    {
      trigger: 'policy-refused',
      perTarget: false,
      message:
        `fleet commit ${short(str(d['commit']))} refused: ${str(d['message']) ?? str(d['code']) ?? ''}`.trim(),
    },
  ],
  // A commit whose signature does not verify: nothing of it is expanded (recorded once per commit).
  'source.unverified': (_e, { d }) => [
    {
      trigger: 'policy-refused',
      perTarget: false,
      message:
        `commit ${short(str(d['commit']))} of ${str(d['repository']) ?? 'a repository'} refused: ${str(d['message']) ?? ''}`.trim(),
    },
  ],
  // A chart package whose provenance does not verify: nothing of it is released (recorded once per package and setting).
  'chart.unverified': (_e, { d }) => [
    {
      trigger: 'policy-refused',
      perTarget: false,
      message:
        `chart ${str(d['chart']) ?? ''} ${str(d['version']) ?? ''} of ${str(d['repository']) ?? 'a chart repository'} refused: ${str(d['message']) ?? ''}`.trim(),
    },
  ],
};

/** Each audited action that tells anything, with its rule; other actions fire nothing. */
const RULES_BY_ACTION = new Map<string, TriggerRule>(
  [TARGET_RULES, ROLLOUT_RULES, FLEET_RULES].flatMap((rules) => Object.entries(rules)),
);

/**
 * The triggers one audit event fires. Every notification starts as an audit event, so what is told
 * is what is recorded, and the audit log's order (id order is commit order under its chain lock) is
 * the order events are matched in.
 */
export function triggersOf(e: AuditRecord): TriggerHit[] {
  const rule = RULES_BY_ACTION.get(e.action);
  if (!rule) return [];
  const [kind, name] = splitScope(e.scope);
  return rule(e, { d: e.details, kind, name, revision: str(e.details['revision']) });
}

function short(revision: string | undefined): string {
  return revision ? revision.slice(0, 12) : '(unknown revision)';
}

function driftMessage(what: string, d: Record<string, unknown>): string {
  const r = d['resource'] as Record<string, unknown> | undefined;
  const obj = r ? `${str(r['kind']) ?? ''} ${str(r['namespace']) ?? ''}/${str(r['name']) ?? ''}` : '';
  return `${what}${obj ? ` on ${obj.trim()}` : ''}`;
}
