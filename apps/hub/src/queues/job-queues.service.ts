import { InjectQueue } from '@nestjs/bullmq';
import { Injectable } from '@nestjs/common';
import { JOB_OPTIONS, jobId, type QueueName, type QueuePayloads } from '@flotilla/contract';
import type { Queue } from 'bullmq';
import { pollOffsetMs } from './poll-jitter.js';

export const RETENTION_SCHEDULER_ID = 'retention';

/** The one place jobs are added: ids and options always come from the contract's registry. */
@Injectable()
export class JobQueues {
  private readonly queues: Record<QueueName, Queue>;

  constructor(
    @InjectQueue('source-sync') sourceSync: Queue,
    @InjectQueue('appset-expand') appsetExpand: Queue,
    @InjectQueue('rollout') rollout: Queue,
    @InjectQueue('fleet-reconcile') fleetReconcile: Queue,
    @InjectQueue('notify') notify: Queue,
    @InjectQueue('retention') retention: Queue,
    @InjectQueue('chart-versions') chartVersions: Queue,
    @InjectQueue('revert') revert: Queue,
  ) {
    this.queues = {
      'source-sync': sourceSync,
      'appset-expand': appsetExpand,
      rollout,
      'fleet-reconcile': fleetReconcile,
      notify,
      retention,
      'chart-versions': chartVersions,
      revert,
    };
  }

  queue(name: QueueName): Queue {
    return this.queues[name];
  }

  /**
   * Adds a job with the registry's id and options. Equal work collapses into one job. `variant`
   * extends the id for work that must run even though equal work already ran or is queued, yet must
   * still collapse with its own repeats: a manual refresh (a unique variant), or a push webhook (the
   * pushed commit, so a redelivered push is one job). `delayMs` holds the job back (a digest's window).
   */
  async enqueue<Q extends QueueName>(
    queue: Q,
    payload: QueuePayloads[Q],
    opts: { variant?: string; delayMs?: number } = {},
  ): Promise<void> {
    const o = JOB_OPTIONS[queue];
    const id = jobId(queue, payload);
    // BullMQ ids may not contain ':'; keep the variant to plain characters.
    const variant = opts.variant?.replace(/[^0-9A-Za-z._-]/g, '').slice(0, 80);
    await this.queues[queue].add(queue, payload, {
      jobId: variant ? `${id}.${variant}` : id,
      attempts: o.attempts,
      backoff: { type: 'exponential', delay: o.backoffMs },
      removeOnComplete: o.removeOnComplete,
      removeOnFail: o.removeOnFail,
      ...(opts.delayMs !== undefined && opts.delayMs > 0 && { delay: Math.round(opts.delayMs) }),
    });
  }

  /**
   * Polling: one repeatable source-sync per repository, replaced when the interval changes, each at
   * its own jittered point of the interval (pollOffsetMs).
   */
  async schedulePoll(repositoryId: string, everySeconds: number): Promise<void> {
    const payload: QueuePayloads['source-sync'] = { repositoryId, reason: 'poll' };
    const o = JOB_OPTIONS['source-sync'];
    const every = Math.round(everySeconds * 1000);
    await this.queues['source-sync'].upsertJobScheduler(
      `poll.${repositoryId}`,
      { every, offset: pollOffsetMs(repositoryId, every) },
      {
        name: 'source-sync',
        data: payload,
        opts: { removeOnComplete: o.removeOnComplete, removeOnFail: o.removeOnFail },
      },
    );
  }

  async unschedulePoll(repositoryId: string): Promise<void> {
    await this.queues['source-sync'].removeJobScheduler(`poll.${repositoryId}`);
  }

  /**
   * A running rollout is driven by a repeatable tick (one scheduler per rollout, so a hub restart
   * finds it in Redis and carries on); removed when the rollout stops moving.
   */
  async scheduleRolloutTicks(payload: QueuePayloads['rollout'], everySeconds: number): Promise<void> {
    const o = JOB_OPTIONS.rollout;
    await this.queues.rollout.upsertJobScheduler(
      `tick.${jobId('rollout', payload)}`,
      { every: Math.round(everySeconds * 1000) },
      {
        name: 'rollout',
        data: payload,
        opts: { removeOnComplete: o.removeOnComplete, removeOnFail: o.removeOnFail },
      },
    );
  }

  async unscheduleRolloutTicks(payload: QueuePayloads['rollout']): Promise<void> {
    await this.queues.rollout.removeJobScheduler(`tick.${jobId('rollout', payload)}`);
  }

  /**
   * Retention runs on one repeatable job under a fixed scheduler id: every replica upserts the same
   * scheduler at start, so Redis holds one and each interval yields one job, run by one worker.
   */
  async scheduleRetention(everyMinutes: number): Promise<void> {
    const o = JOB_OPTIONS.retention;
    const payload: QueuePayloads['retention'] = { trigger: 'schedule' };
    const every = Math.round(everyMinutes * 60_000);
    // The first run one interval after the scheduler is made, not at every hub start (BullMQ's
    // default for `every`); a scheduler already in Redis keeps its own next run.
    await this.queues.retention.upsertJobScheduler(
      RETENTION_SCHEDULER_ID,
      { every, startDate: Date.now() + every },
      {
        name: 'retention',
        data: payload,
        opts: { attempts: o.attempts, removeOnComplete: o.removeOnComplete, removeOnFail: o.removeOnFail },
      },
    );
  }

  /**
   * Chart version ranges are resolved again on one repeatable job under a fixed scheduler id (as
   * retention): a chart published within a range reaches the fleet without a Git change.
   */
  async scheduleChartVersionChecks(everySeconds: number): Promise<void> {
    const o = JOB_OPTIONS['chart-versions'];
    const payload: QueuePayloads['chart-versions'] = { trigger: 'schedule' };
    const every = Math.round(everySeconds * 1000);
    await this.queues['chart-versions'].upsertJobScheduler(
      'chart-versions',
      { every, startDate: Date.now() + every },
      {
        name: 'chart-versions',
        data: payload,
        opts: { attempts: o.attempts, removeOnComplete: o.removeOnComplete, removeOnFail: o.removeOnFail },
      },
    );
  }

  async unscheduleChartVersionChecks(): Promise<void> {
    await this.queues['chart-versions'].removeJobScheduler('chart-versions');
  }

  /** For /readyz: a command round-trip to Redis. */
  async ping(): Promise<void> {
    await this.queues['source-sync'].getJobCounts('waiting');
  }
}
