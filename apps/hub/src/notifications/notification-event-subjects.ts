// What each audit event is about (appset, project, target, cluster) and whether a rollout tells its story, read for a whole batch.
import { asRecord } from '../common/json.js';
import type { Prisma } from '../generated/prisma/client.js';
import type { EventContext } from './notification-match.js';
import { splitScope, type AuditRecord } from './notification-triggers.js';

type Tx = Prisma.TransactionClient;

/** An event's context for policy matching, and whether a rollout released its target at its revision. */
export interface EventSubject {
  context: EventContext;
  rolloutActive: boolean;
}

/** Appset, project, target and cluster of each event, read in a few queries for the batch. */
export async function readEventSubjects(tx: Tx, events: AuditRecord[]): Promise<Map<bigint, EventSubject>> {
  const rows = await readScopeRows(tx, events);
  const released = await readReleasedTargets(tx, events, rows.targets);
  const out = new Map<bigint, EventSubject>();
  for (const e of events) {
    const { context, appSetId } = contextOf(e, rows);
    out.set(e.id, {
      context,
      rolloutActive: appSetId !== null && released(appSetId, revisionOf(e), context.target),
    });
  }
  return out;
}

type ScopeRows = Awaited<ReturnType<typeof readScopeRows>>;

/** The targets, appsets (also those of the targets) and clusters the batch's scopes name. */
async function readScopeRows(tx: Tx, events: AuditRecord[]) {
  const names = (kind: string) => [
    ...new Set(
      events
        .map((e) => splitScope(e.scope))
        .filter(([k]) => k === kind)
        .map(([, n]) => n),
    ),
  ];
  const targets = new Map(
    (
      await tx.target.findMany({
        where: { name: { in: names('target') } },
        select: {
          name: true,
          appSetId: true,
          appSet: { select: { name: true, project: true } },
          cluster: { select: { name: true, labels: true } },
        },
      })
    ).map((t) => [t.name, t]),
  );
  const appSets = new Map(
    (
      await tx.applicationSet.findMany({
        where: {
          name: { in: [...names('appset'), ...[...targets.values()].map((t) => t.appSet.name)] },
        },
        select: { id: true, name: true, project: true },
      })
    ).map((a) => [a.name, a]),
  );
  const clusters = new Map(
    (
      await tx.cluster.findMany({
        where: { name: { in: names('cluster') } },
        select: { name: true, labels: true },
      })
    ).map((c) => [c.name, c]),
  );
  return { targets, appSets, clusters };
}

function revisionOf(e: AuditRecord): string | null {
  return typeof e.details['revision'] === 'string' ? e.details['revision'] : null;
}

/**
 * Whether a rollout released the event's target at the event's revision: that target's syncs of
 * it are told by the rollout's messages. Judged by what the rollout released, not by time: a
 * report's audit event may be written after the rollout it completed, and a lagging dispatcher
 * must fold alike; a cluster added after the rollout completed is released without it, and told.
 */
async function readReleasedTargets(
  tx: Tx,
  events: AuditRecord[],
  targets: ScopeRows['targets'],
): Promise<(appSetId: string, revision: string | null, target: string | null) => boolean> {
  const revisions = [...new Set(events.map(revisionOf).filter((r): r is string => r !== null))];
  const rollouts =
    revisions.length === 0 || targets.size === 0
      ? []
      : await tx.rollout.findMany({
          where: {
            appSetId: { in: [...new Set([...targets.values()].map((t) => t.appSetId))] },
            revision: { in: revisions },
          },
          select: { appSetId: true, revision: true, progress: true },
        });
  const released = rollouts.map((r) => ({
    appSetId: r.appSetId,
    revision: r.revision,
    // progress.released: target name → when the rollout released it (rollout-plan.ts).
    targets: asRecord((r.progress as { released?: unknown } | null)?.released),
  }));
  return (appSetId, revision, target) =>
    target !== null &&
    released.some(
      (r) => r.appSetId === appSetId && r.revision === revision && r.targets[target] !== undefined,
    );
}

/** The event's context from the rows its scope names, and the appset it belongs to (null: none). */
function contextOf(e: AuditRecord, rows: ScopeRows): { context: EventContext; appSetId: string | null } {
  const [kind, name] = splitScope(e.scope);
  const context: EventContext = {
    appSet: null,
    project: null,
    target: null,
    cluster: null,
    clusterLabels: null,
  };
  let appSetId: string | null = null;
  if (kind === 'target') {
    const t = rows.targets.get(name);
    context.target = name;
    if (t) {
      Object.assign(context, {
        appSet: t.appSet.name,
        project: t.appSet.project,
        cluster: t.cluster.name,
        clusterLabels: asRecord(t.cluster.labels),
      });
      appSetId = t.appSetId;
    }
  } else if (kind === 'appset') {
    const a = rows.appSets.get(name);
    context.appSet = name;
    context.project = a?.project ?? null;
    appSetId = a?.id ?? null;
  } else if (kind === 'cluster') {
    const c = rows.clusters.get(name);
    context.cluster = name;
    context.clusterLabels = c ? asRecord(c.labels) : {};
  }
  return { context, appSetId };
}
