import type { FleetEventView } from '@flotilla/contract';
import type { QueryClient } from '@tanstack/react-query';
import { authHeaders } from './api.js';

/** Query keys the console refetches when the hub says targets, clusters, windows or break-glass changed. */
const LIVE_KEYS = [
  'fleet',
  'target',
  'appsets',
  'appset',
  'rollout',
  'history',
  'operations',
  'windows-of',
  'windows',
  'break-glass',
] as const;

/** At most one refetch wave per this long, however fast changes stream in (100 a second at a fleet's busiest). */
const THROTTLE_MS = 1000;

export type LiveState = 'connecting' | 'live' | 'reconnecting';

/**
 * Follows `GET /api/v1/events` (Server-Sent Events). EventSource cannot send a bearer token, so
 * the stream is read with fetch. Events name what changed; the console refetches only the queries
 * that are on screen (TanStack Query's active queries), throttled so a burst is one refetch, not a
 * hundred. Reconnects with backoff; the hub reads changes from PostgreSQL, so whichever replica
 * answers streams every change.
 */
export function followFleetEvents(client: QueryClient, onState: (s: LiveState) => void): () => void {
  const abort = new AbortController();
  let pending = false;
  /**
   * Appsets the stream named: their generators' output (costly to compute) is asked again only
   * then. `every`: after a (re)connect nothing says which appsets were expanded meanwhile, so the
   * output on screen is asked again whatever its appset.
   */
  let appSets: Set<string> | 'every' = new Set<string>();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const flush = () => {
    timer = undefined;
    if (!pending) return;
    pending = false;
    for (const key of LIVE_KEYS) void client.invalidateQueries({ queryKey: [key], refetchType: 'active' });
    const previews =
      appSets === 'every' ? [['appset-preview']] : [...appSets].map((n) => ['appset-preview', n]);
    for (const queryKey of previews) void client.invalidateQueries({ queryKey, refetchType: 'active' });
    appSets = new Set<string>();
  };
  const changed = (named: string[] | 'every') => {
    pending = true;
    if (named === 'every') appSets = 'every';
    else if (appSets !== 'every') for (const name of named) appSets.add(name);
    timer ??= setTimeout(flush, THROTTLE_MS);
  };

  void (async () => {
    let delay = 1000;
    while (!abort.signal.aborted) {
      try {
        onState('connecting');
        const res = await fetch('/api/v1/events', {
          headers: { Accept: 'text/event-stream', ...authHeaders() },
          signal: abort.signal,
        });
        if (!res.ok || !res.body) throw new Error(`events: ${res.status}`);
        onState('live');
        delay = 1000;
        // Whatever happened while disconnected is caught up by one refetch.
        changed('every');
        await readEvents(res.body, (event, data) => {
          if (event !== 'fleet') return;
          const e = JSON.parse(data) as FleetEventView;
          if (e.targets.length > 0 || e.clusters.length > 0 || e.policies || e.appSets.length > 0)
            changed(e.appSets);
        });
      } catch {
        if (abort.signal.aborted) return;
      }
      onState('reconnecting');
      await new Promise((r) => setTimeout(r, delay));
      delay = Math.min(delay * 2, 30_000);
    }
  })();
  return () => {
    abort.abort();
    if (timer) clearTimeout(timer);
  };
}

/** The text/event-stream format: blank-line separated blocks of `event:` and `data:` lines. */
async function readEvents(
  body: ReadableStream<BufferSource>,
  onEvent: (event: string, data: string) => void,
): Promise<void> {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value;
    let end: number;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let event = 'message';
      const data: string[] = [];
      for (const line of block.split('\n')) {
        if (line.startsWith('event:')) event = line.slice(6).trim();
        else if (line.startsWith('data:')) data.push(line.slice(5).trimStart());
      }
      if (data.length > 0) onEvent(event, data.join('\n'));
    }
  }
}
