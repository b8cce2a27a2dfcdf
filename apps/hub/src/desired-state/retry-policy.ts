// Argo CD's `syncPolicy.retry` read into the retry policy an agent follows, with Argo CD's defaults.
import { DEFAULT_RETRY_POLICY, type RetryPolicy } from '@flotilla/contract';
import { parseGoDuration } from '@flotilla/windows';
import {
  checkBoolean,
  integerAtLeast,
  isTemplated,
  objectWithKeys,
  SYNC_POLICY_PATH,
  SyncSettingsError,
} from './sync-settings-fields.js';

const RETRY_PATH = `${SYNC_POLICY_PATH}.retry`;
const RETRY_KEYS = ['limit', 'backoff', 'refresh'];
const BACKOFF_KEYS = ['duration', 'factor', 'maxDuration'];

/**
 * Argo CD's `syncPolicy.retry` with its defaults for what is left out (limit: Flotilla's 5, as the
 * ApplicationSet controller gives; backoff 5s × 2, at most 3m). Durations are Go durations (`30s`,
 * `1m30s`) or plain seconds, as Argo CD reads them. Throws SyncSettingsError naming the field;
 * undefined when no retry is written. A templated field is judged once expanded.
 */
export function parseRetryPolicy(raw: unknown): RetryPolicy | undefined {
  if (raw === undefined || raw === null || isTemplated(raw)) return undefined;
  const retry = objectWithKeys(raw, RETRY_KEYS, RETRY_PATH);
  const refresh = retry['refresh'];
  if (refresh !== undefined && refresh !== null) {
    checkBoolean(refresh, `${RETRY_PATH}.refresh`);
    if (refresh === false)
      throw new SyncSettingsError(
        'retry.refresh: false is not supported: a retry always syncs the newest revision Git has for the target (refresh: true)',
        `${RETRY_PATH}.refresh`,
        'unsupported-sync-option',
      );
  }
  const defaults = DEFAULT_RETRY_POLICY.backoff;
  const backoffRaw = retry['backoff'];
  const backoff =
    backoffRaw === undefined || backoffRaw === null || isTemplated(backoffRaw)
      ? {}
      : objectWithKeys(backoffRaw, BACKOFF_KEYS, `${RETRY_PATH}.backoff`);
  const limit = retry['limit'];
  const factor = backoff['factor'];
  return {
    limit:
      limit === undefined || limit === null || isTemplated(limit)
        ? DEFAULT_RETRY_POLICY.limit
        : integerAtLeast(limit, -1, `${RETRY_PATH}.limit`),
    backoff: {
      durationMs: durationMsOf(backoff['duration'], defaults.durationMs, `${RETRY_PATH}.backoff.duration`),
      factor:
        factor === undefined || factor === null || isTemplated(factor)
          ? defaults.factor
          : integerAtLeast(factor, 1, `${RETRY_PATH}.backoff.factor`),
      maxDurationMs: durationMsOf(
        backoff['maxDuration'],
        defaults.maxDurationMs,
        `${RETRY_PATH}.backoff.maxDuration`,
      ),
    },
  };
}

/** A Go duration (`5s`, `1m30s`) or plain seconds (`5`, "5"), as Argo CD's retry reads it; > 0. */
function durationMsOf(value: unknown, fallback: number, path: string): number {
  if (value === undefined || value === null || isTemplated(value)) return fallback;
  let ms: number | undefined;
  if (typeof value === 'number') ms = value * 1_000;
  else if (typeof value === 'string' && /^\d+$/.test(value.trim())) ms = Number(value.trim()) * 1_000;
  else if (typeof value === 'string') {
    try {
      ms = parseGoDuration(value.trim());
    } catch (e) {
      throw new SyncSettingsError((e as Error).message, path, 'invalid-sync-policy');
    }
  }
  if (ms === undefined || !Number.isFinite(ms) || ms <= 0)
    throw new SyncSettingsError(
      `expected a duration above zero such as "5s", "2m" or a number of seconds, got ${JSON.stringify(value)}`,
      path,
      'invalid-sync-policy',
    );
  return ms;
}
