/**
 * `--watch` on the read commands (targets, history, rollouts): shows the answer, then asks again every
 * few seconds and shows it again each time it changed — a whole table (after a blank line), one JSON
 * line (so `-o json --watch` is NDJSON) or one more YAML document. One request per poll, so a watch
 * costs the hub what a person pressing Enter every two seconds would. It stops on Ctrl-C (SIGINT) or
 * SIGTERM, or after `--timeout` seconds, and then exits 0: stopping a watch is not a failure.
 */

export const WATCH_INTERVAL_MS = 2000;

export interface WatchSettings {
  /** Between the end of one poll and the start of the next. */
  intervalMs: number;
  /** Stop after this long; undefined: until interrupted. */
  timeoutMs?: number;
  /** Stops the watch as a signal does (for callers that stop it themselves). */
  signal?: AbortSignal;
  /** Where the output goes (process.stdout by default). */
  write?: (text: string) => void;
}

/** Format-aware separators: what goes before a repeated answer so that the stream stays parseable. */
export type WatchFormat = 'table' | 'json' | 'yaml';

export async function watch(
  format: WatchFormat,
  render: () => Promise<string>,
  settings: WatchSettings,
): Promise<void> {
  const write = settings.write ?? ((text: string) => void process.stdout.write(text));
  const stop = new AbortController();
  const onSignal = (): void => stop.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  settings.signal?.addEventListener('abort', onSignal, { once: true });
  const timer =
    settings.timeoutMs === undefined ? undefined : setTimeout(onSignal, settings.timeoutMs).unref();
  let last: string | undefined;
  try {
    while (!stop.signal.aborted) {
      // A poll still waiting for the hub does not hold up Ctrl-C.
      const text = await Promise.race([render(), aborted(stop.signal)]);
      if (text === undefined || stop.signal.aborted) break;
      if (text !== last) {
        write(last === undefined ? text : `${separator(format)}${text}`);
        last = text;
      }
      await sleep(settings.intervalMs, stop.signal);
    }
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    settings.signal?.removeEventListener('abort', onSignal);
    if (timer) clearTimeout(timer);
  }
}

function separator(format: WatchFormat): string {
  switch (format) {
    case 'table':
      return '\n';
    case 'json':
      return '';
    case 'yaml':
      return '---\n';
  }
}

function aborted(signal: AbortSignal): Promise<undefined> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve(undefined);
    else signal.addEventListener('abort', () => resolve(undefined), { once: true });
  });
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}
