// A TargetOperation row as people see it (the API, `flotilla sync --wait`, the console).
import type { TargetOperationView } from '@flotilla/contract';
import type { TargetOperation } from '../generated/prisma/client.js';
import { optionsOf, type RunOptions } from './run-options.js';

export function operationView(r: TargetOperation): TargetOperationView {
  return {
    id: r.id,
    target: r.targetName,
    kind: r.kind,
    ...viewOptions(optionsOf(r)),
    batchId: r.batchId,
    requestedBy: r.requestedBy,
    reason: r.reason,
    state: r.state === 'Pending' && r.expiresAt.getTime() <= Date.now() ? 'Expired' : r.state,
    message: r.message,
    createdAt: r.createdAt.toISOString(),
    expiresAt: r.expiresAt.toISOString(),
    finishedAt: r.finishedAt?.toISOString() ?? null,
    terminate:
      r.terminateRequestedBy === null
        ? null
        : {
            requestedBy: r.terminateRequestedBy,
            reason: r.terminateReason ?? '',
            requestedAt: (r.terminateRequestedAt ?? r.createdAt).toISOString(),
          },
  };
}

function viewOptions(
  o: RunOptions,
): Pick<TargetOperationView, 'prune' | 'dryRun' | 'force' | 'syncOptions' | 'revision' | 'resources'> {
  return {
    prune: o.prune,
    dryRun: o.dryRun,
    force: o.force === true,
    syncOptions: o.syncOptions ?? [],
    revision: o.revision ?? null,
    resources: o.resources ?? [],
  };
}
