/**
 * The hub's BullMQ queues: one registry of names, payloads and job options, so that no call site
 * invents its own ids or retries. Deterministic job ids make duplicates collapse and replays safe.
 */
export interface QueuePayloads {
  'source-sync': { repositoryId: string; reason: 'poll' | 'webhook' | 'manual' | 'appset-created' };
  'appset-expand': { appSetId: string; inputsHash: string };
  rollout: { appSetId: string; revision: string };
  /** Reconcile the hub's own objects from one fleet source at one commit. */
  'fleet-reconcile': { fleetSourceId: string; commit: string; inventoryHash: string };
  /** Send one notification (a delivery row: one message to one destination), with retries. */
  notify: {
    deliveryId: string;
    /** sha256 (hex) of the delivery's dedupe key, which is free text (appset and target names). */
    dedupeHash: string;
    destinationId: string;
  };
  /** Prune old report payloads and ids, sync history and unneeded bundles (one run at a time). */
  retention: { trigger: 'schedule' | 'manual' };
  /** Resolve every chart's version range again; re-expand the appsets whose resolution moved. */
  'chart-versions': { trigger: 'schedule' | 'manual' };
  /** Open a revert pull request for a target an automatic rollback pinned, away from revision `from`. */
  revert: { targetId: string; from: string };
}
export type QueueName = keyof QueuePayloads;

export const QUEUE_NAMES = [
  'source-sync',
  'appset-expand',
  'rollout',
  'fleet-reconcile',
  'notify',
  'retention',
  'chart-versions',
  'revert',
] as const satisfies readonly QueueName[];

interface JobOptions {
  attempts: number;
  backoffMs: number;
  removeOnComplete: number;
  removeOnFail: number;
}

export const JOB_OPTIONS: Record<QueueName, JobOptions> = {
  'source-sync': { attempts: 5, backoffMs: 1_000, removeOnComplete: 100, removeOnFail: 500 },
  'appset-expand': { attempts: 5, backoffMs: 1_000, removeOnComplete: 100, removeOnFail: 500 },
  rollout: { attempts: 10, backoffMs: 2_000, removeOnComplete: 100, removeOnFail: 500 },
  'fleet-reconcile': { attempts: 5, backoffMs: 1_000, removeOnComplete: 100, removeOnFail: 500 },
  // 5 tries over about 15 s of back-off, then the delivery is marked Failed.
  notify: { attempts: 5, backoffMs: 1_000, removeOnComplete: 1_000, removeOnFail: 1_000 },
  // A failed run is simply done again at the next interval; batches already committed stay done.
  retention: { attempts: 1, backoffMs: 60_000, removeOnComplete: 10, removeOnFail: 50 },
  // A failed check (a repository down) is done again at the next interval.
  'chart-versions': { attempts: 1, backoffMs: 60_000, removeOnComplete: 10, removeOnFail: 50 },
  // A host down is tried again; a failed attempt leaves nothing behind (its branch is deleted).
  revert: { attempts: 3, backoffMs: 5_000, removeOnComplete: 100, removeOnFail: 500 },
};

/**
 * Job ids as DESIGN.md names them (`repo:<id>`, …): equal work gets an equal id, so duplicates collapse.
 * BullMQ refuses ':' inside custom ids, so the separator on the wire is '.'.
 */
export function jobId<Q extends QueueName>(queue: Q, payload: QueuePayloads[Q]): string {
  switch (queue) {
    case 'source-sync':
      return `repo.${(payload as QueuePayloads['source-sync']).repositoryId}`;
    case 'appset-expand': {
      const p = payload as QueuePayloads['appset-expand'];
      return `appset.${p.appSetId}.${p.inputsHash}`;
    }
    case 'rollout': {
      const p = payload as QueuePayloads['rollout'];
      return `rollout.${p.appSetId}.${p.revision}`;
    }
    case 'fleet-reconcile': {
      const p = payload as QueuePayloads['fleet-reconcile'];
      return `fleet.${p.fleetSourceId}.${p.commit}.${p.inventoryHash}`;
    }
    case 'notify': {
      // notify:<dedupe-key>:<destination>, the key hashed: it is free text.
      const p = payload as QueuePayloads['notify'];
      return `notify.${p.dedupeHash}.${p.destinationId}`;
    }
    case 'retention':
      return `retention.${(payload as QueuePayloads['retention']).trigger}`;
    case 'chart-versions':
      return `chart-versions.${(payload as QueuePayloads['chart-versions']).trigger}`;
    case 'revert': {
      const p = payload as QueuePayloads['revert'];
      return `revert.${p.targetId}.${p.from}`;
    }
  }
  throw new Error(`unknown queue ${String(queue)}`);
}
