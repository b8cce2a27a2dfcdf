import { type KubeConfig, Watch } from '@kubernetes/client-node';

export interface WatchedConfigMap {
  metadata?: { namespace?: string; name?: string };
  data?: Record<string, string>;
}

/**
 * Watches every ConfigMap of a cluster until `stop()`. client-node ends a watch after a quiet spell,
 * so it is started again at once; the fresh watch replays current state as ADDED events, which is
 * all a listener keyed by object needs.
 */
export async function watchConfigMaps(
  kc: KubeConfig,
  onObject: (obj: WatchedConfigMap) => void,
): Promise<{ stop(): void }> {
  const watch = new Watch(kc);
  let stopped = false;
  let current: AbortController | undefined;
  const start = async (): Promise<void> => {
    current = await watch.watch(
      '/api/v1/configmaps',
      {},
      (_type: string, obj: WatchedConfigMap) => onObject(obj),
      () => {
        if (!stopped) setTimeout(() => void start().catch(() => undefined), 50);
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
