import { randomBytes } from 'node:crypto';
import { groupOf, type KubeObject, type ObjectRef, type Report } from '@flotilla/contract';

/** `source.component` and `reportingComponent` of every Event the agent writes. */
export const EVENT_SOURCE = 'flotilla-agent';

/** The reasons the agent gives, as `kubectl get events` shows them beside the object. */
export const EVENT_REASONS = {
  synced: 'Synced',
  pruned: 'Pruned',
  syncFailed: 'SyncFailed',
  healed: 'Healed',
  contested: 'HealContested',
} as const;
export type EventReason = (typeof EVENT_REASONS)[keyof typeof EVENT_REASONS];

/** One Event to write about one object, before it becomes a core/v1 Event. */
export interface ClusterEvent {
  involved: { apiVersion: string; kind: string; name: string; namespace?: string };
  type: 'Normal' | 'Warning';
  reason: EventReason;
  message: string;
}

/**
 * Resolves a report's reference (group and kind) to an apiVersion from the objects a target knows
 * of; a core kind it has not seen is `v1`.
 */
export function apiVersionLookup(
  known: Iterable<{ apiVersion: string; kind: string }>,
): (ref: ObjectRef) => string | undefined {
  const versions = new Map<string, string>();
  for (const o of known) versions.set(`${groupOf(o.apiVersion)}/${o.kind}`, o.apiVersion);
  return (ref) => versions.get(`${ref.group}/${ref.kind}`) ?? (ref.group === '' ? 'v1' : undefined);
}

/** The Event API caps `message` at 1 KiB in practice (kubectl and the recorder truncate there). */
const MAX_MESSAGE = 1024;

/**
 * The Events a report stands for, on the objects it names: an applied or pruned object, one that
 * failed to sync (a Warning), a heal confirmed by a fresh read, a heal given up as contested. An
 * unchanged object, a drift merely detected and a health report make none: Events are for what the
 * agent did or failed to do. `apiVersionOf` resolves a reference (reports carry the group only);
 * an object it cannot resolve gets no Event rather than one pointing at the wrong version.
 */
export function eventsOfReport(
  report: Report,
  target: string,
  apiVersionOf: (ref: ObjectRef) => string | undefined,
): ClusterEvent[] {
  const out: ClusterEvent[] = [];
  const push = (ref: ObjectRef, type: ClusterEvent['type'], reason: EventReason, message: string): void => {
    const apiVersion = apiVersionOf(ref);
    if (!apiVersion) return;
    const involved: ClusterEvent['involved'] = { apiVersion, kind: ref.kind, name: ref.name };
    if (ref.namespace) involved.namespace = ref.namespace;
    out.push({ involved, type, reason, message: message.slice(0, MAX_MESSAGE) });
  };
  if (report.type === 'sync') {
    const rev = report.revision.slice(0, 12);
    for (const r of report.resources) {
      const what = r.hookPhase ? `${r.hookPhase} hook` : 'object';
      if (r.action === 'applied')
        push(
          r,
          'Normal',
          EVENT_REASONS.synced,
          `${what} synced by target ${target} at revision ${rev} (${report.trigger})`,
        );
      else if (r.action === 'pruned')
        push(
          r,
          'Normal',
          EVENT_REASONS.pruned,
          `pruned by target ${target}: no longer declared at revision ${rev}`,
        );
      else if (r.action === 'failed')
        push(
          r,
          'Warning',
          EVENT_REASONS.syncFailed,
          `${what} failed to sync for target ${target} at revision ${rev}: ${r.message || report.message}`,
        );
    }
  } else if (report.type === 'drift') {
    const paths = report.paths.filter((p) => p !== '').join(', ');
    const by = report.manager ? ` by ${report.manager}` : '';
    if (report.state === 'healed')
      push(
        report.resource,
        'Normal',
        EVENT_REASONS.healed,
        paths
          ? `drift${by} healed by target ${target}: ${paths}`
          : `recreated by target ${target} after it was deleted${by}`,
      );
    else if (report.state === 'contested')
      push(
        report.resource,
        'Warning',
        EVENT_REASONS.contested,
        `self-heal given up for target ${target}: ${report.manager ?? 'an unknown writer'} keeps changing ${paths || 'the object'}`,
      );
  }
  return out;
}

/**
 * The core/v1 Event for `e`, as client-go's recorder writes it: named after the object with a
 * random suffix, in the object's namespace (`default` for a cluster-scoped object), count 1.
 */
export function eventObject(e: ClusterEvent, at: Date, host: string): KubeObject {
  const time = at.toISOString().replace(/\.\d{3}Z$/, 'Z');
  return {
    apiVersion: 'v1',
    kind: 'Event',
    metadata: {
      name: `${e.involved.name.slice(0, 200)}.${randomBytes(8).toString('hex')}`,
      namespace: e.involved.namespace ?? 'default',
    },
    involvedObject: e.involved,
    reason: e.reason,
    message: e.message,
    type: e.type,
    source: { component: EVENT_SOURCE, host },
    reportingComponent: EVENT_SOURCE,
    reportingInstance: host,
    firstTimestamp: time,
    lastTimestamp: time,
    count: 1,
  };
}
