import { type Logger } from 'pino';
import { type KubeClient } from '../kube/kube-client.js';
import { type ClusterEvent, eventObject } from './cluster-events.js';

export interface EventRecorderOptions {
  /** Events waiting to be written beyond this are dropped (counted): a sync must never wait on them. */
  maxPending?: number;
  now?: () => Date;
}

/**
 * Writes the agent's Events to the cluster one at a time, behind the work they describe: `record`
 * returns at once, a full queue drops the newest (counted, warned once per burst), and a failed
 * write (no RBAC for events, the API server away) is logged and counted, never retried or thrown
 * into a sync. Events are a courtesy to whoever runs `kubectl describe`; the reports are the record.
 */
export class EventRecorder {
  private readonly pending: ClusterEvent[] = [];
  private running: Promise<void> | undefined;
  private warnedFull = false;
  private stopped = false;
  private readonly maxPending: number;
  private readonly now: () => Date;
  /** Written, dropped because the queue was full, refused by the API server: for /metrics. */
  readonly counts = { written: 0, dropped: 0, failed: 0 };
  /** Written per reason, for /metrics. */
  readonly writtenByReason = new Map<string, number>();

  constructor(
    private readonly kube: KubeClient,
    private readonly host: string,
    private readonly log: Logger,
    options: EventRecorderOptions = {},
  ) {
    this.maxPending = options.maxPending ?? 1_000;
    this.now = options.now ?? (() => new Date());
  }

  record(events: readonly ClusterEvent[]): void {
    if (this.stopped) return;
    const limit = this.kube.namespaces;
    for (const e of events) {
      // A namespace-scoped agent may write Events only in its namespaces: an object it refused
      // elsewhere (or cluster-scoped, whose Events go to `default`) is in the sync report alone.
      if (limit && !limit.includes(e.involved.namespace ?? 'default')) continue;
      if (this.pending.length >= this.maxPending) {
        this.counts.dropped++;
        if (!this.warnedFull) {
          this.warnedFull = true;
          this.log.warn({ maxPending: this.maxPending }, 'too many Kubernetes Events waiting; dropping some');
        }
        continue;
      }
      this.pending.push(e);
    }
    this.running ??= this.drain().finally(() => {
      this.running = undefined;
    });
  }

  /** Resolves when every Event recorded so far was written (or failed). */
  async flushed(): Promise<void> {
    while (this.running) await this.running;
  }

  /** Stops taking Events and waits for the one being written; what is still queued is dropped. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.counts.dropped += this.pending.splice(0).length;
    await this.running;
  }

  private async drain(): Promise<void> {
    let e: ClusterEvent | undefined;
    while (!this.stopped && (e = this.pending.shift()) !== undefined) {
      try {
        await this.kube.create(eventObject(e, this.now(), this.host));
        this.counts.written++;
        this.writtenByReason.set(e.reason, (this.writtenByReason.get(e.reason) ?? 0) + 1);
      } catch (err) {
        this.counts.failed++;
        // One line per failure would flood the log when RBAC lacks events: debug after the first.
        const level = this.counts.failed === 1 ? 'warn' : 'debug';
        this.log[level](
          { reason: e.reason, object: `${e.involved.kind}/${e.involved.name}`, err: (err as Error).message },
          'cannot write a Kubernetes Event',
        );
      }
    }
    this.warnedFull = false;
  }
}
