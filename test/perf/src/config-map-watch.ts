import { type KubeConfig, Watch } from '@kubernetes/client-node';

export interface WatchedConfigMap {
  metadata?: { namespace?: string; name?: string; resourceVersion?: string };
  data?: Record<string, string>;
}

/**
 * Watches the ConfigMaps of a cluster (only those called `name` when given, by field selector) until
 * `stop()`. client-node ends a watch after 30 s without an event, so it is started again at once;
 * the fresh watch replays current state as ADDED events, which is all a listener keyed by object
 * needs. With `resume` it starts again from the last resourceVersion seen instead, so a quiet
 * cluster costs one request per 30 s and no replay (a thousand watches in one thread replaying
 * every object twice a minute would be the bench's own load); after an ERROR event (e.g. 410 Gone)
 * it starts afresh. Only for a cluster whose store outlives the watch (not one restarted under it).
 */
export async function watchConfigMaps(
  kc: KubeConfig,
  onObject: (obj: WatchedConfigMap) => void,
  opts: { name?: string; resume?: boolean } = {},
): Promise<{ stop(): void }> {
  const watch = new Watch(kc);
  let stopped = false;
  let current: AbortController | undefined;
  let resourceVersion: string | undefined;
  const start = async (): Promise<void> => {
    current = await watch.watch(
      '/api/v1/configmaps',
      {
        ...(opts.name ? { fieldSelector: `metadata.name=${opts.name}` } : {}),
        ...(resourceVersion ? { resourceVersion } : {}),
      },
      (type: string, obj: WatchedConfigMap) => {
        if (type === 'ERROR') {
          resourceVersion = undefined;
          return;
        }
        if (opts.resume) resourceVersion = obj.metadata?.resourceVersion ?? resourceVersion;
        if (type !== 'BOOKMARK') onObject(obj);
      },
      (err: unknown) => {
        // Ended by client-node's inactivity timeout (or the server): again at once. Failed (say the
        // cluster is away): again after a second, not in a tight loop of failing connections.
        const failed = err instanceof Error && err.name !== 'TimeoutError' && err.name !== 'AbortError';
        if (!stopped) setTimeout(() => void start().catch(() => undefined), failed ? 1_000 : 50);
      },
    );
  };
  await start();
  return {
    stop() {
      stopped = true;
      current?.abort();
    },
  };
}
