import type { LabelSelector } from '@flotilla/labels';
import { compileSelector } from '@flotilla/labels';
import { HubError } from '../common/hub-error.js';
import { asRecord } from '../common/json.js';
import type { Database } from '../db/database.js';

/** What a request that acts on many targets names: an appset, cluster labels, or both. */
export interface TargetSelection {
  appSet?: string | undefined;
  clusterSelector?: LabelSelector | undefined;
}

/**
 * The targets a selection names, by name. An unknown appset and a selection that matches nothing
 * are errors naming the field, so a typo never reads as "done, nothing to do".
 */
export async function selectTargets(db: Database, selection: TargetSelection) {
  let appSetId: string | undefined;
  if (selection.appSet !== undefined) {
    const appSet = await db.prisma.applicationSet.findUnique({
      where: { name: selection.appSet },
      select: { id: true },
    });
    if (!appSet) throw HubError.notFound('appset', selection.appSet);
    appSetId = appSet.id;
  }
  // The clusters are matched first (a handful of rows), so only their targets are read.
  let clusterIds: string[] | undefined;
  if (selection.clusterSelector) {
    const matches = compileSelector(selection.clusterSelector, 'clusterSelector');
    const clusters = await db.prisma.cluster.findMany({ select: { id: true, labels: true } });
    clusterIds = clusters.filter((c) => matches(asRecord(c.labels))).map((c) => c.id);
  }
  const chosen = await db.prisma.target.findMany({
    where: {
      ...(appSetId !== undefined && { appSetId }),
      ...(clusterIds !== undefined && { clusterId: { in: clusterIds } }),
    },
    orderBy: { name: 'asc' },
    include: {
      pin: { select: { targetId: true } },
      // What its agent can run, for a sync asked of the whole selection (operations/agent-support.ts).
      cluster: { select: { name: true, agentVersion: true, agentFeatures: true } },
    },
  });
  if (chosen.length === 0) {
    const scope = selection.appSet === undefined ? 'no target' : `no target of appset "${selection.appSet}"`;
    throw new HubError(
      404,
      'not-found',
      selection.clusterSelector ? `${scope} is on a cluster matching clusterSelector` : `${scope} exists`,
      selection.clusterSelector ? 'clusterSelector' : 'appSet',
    );
  }
  return chosen;
}
