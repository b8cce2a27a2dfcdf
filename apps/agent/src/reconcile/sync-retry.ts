import { DEFAULT_RETRY_POLICY, type RetryPolicy, type SyncPolicy } from '@flotilla/contract';

/** The retry policy a target's syncs follow: its own `syncPolicy.retry`, or the default. */
export function effectiveRetryPolicy(policy: SyncPolicy): RetryPolicy {
  return policy.retry ?? DEFAULT_RETRY_POLICY;
}

/** The wait before retry `n` (0 for the first retry): `duration × factor^n`, at most `maxDuration`. */
export function retryDelayMs(policy: RetryPolicy, n: number): number {
  const { durationMs, factor, maxDurationMs } = policy.backoff;
  return Math.min(maxDurationMs, durationMs * factor ** n);
}

/**
 * When a revision that failed `failures` (≥ 1) times in a row, the last at `lastAt`, may be tried
 * again, or null when its retries are spent: then only a new revision or a requested sync runs it.
 */
export function nextRetryAt(policy: RetryPolicy, failures: number, lastAt: Date): Date | null {
  const retriesDone = failures - 1;
  if (policy.limit >= 0 && retriesDone >= policy.limit) return null;
  return new Date(lastAt.getTime() + retryDelayMs(policy, retriesDone));
}

/** Said in the failed sync's report and the agent's log: what happens next. */
export function retryOutlook(policy: RetryPolicy, failures: number, lastAt: Date): string {
  const at = nextRetryAt(policy, failures, lastAt);
  const of = policy.limit < 0 ? '' : ` of ${policy.limit}`;
  if (!at)
    return `no retry left (retry limit ${policy.limit}): a new revision or a requested sync (flotilla sync) runs it again`;
  const seconds = Math.round((at.getTime() - lastAt.getTime()) / 100) / 10;
  return `retry ${failures}${of} in ${seconds}s`;
}
