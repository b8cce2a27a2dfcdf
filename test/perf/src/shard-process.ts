import type { ChildProcess } from 'node:child_process';

/**
 * Helpers the fleet and swarm benches share for the shard processes they fork and the batches of
 * calls they make against the hub.
 */

/** Runs `fn` over `items` with at most `limit` calls in flight; results in input order. */
export async function inBatches<T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T) => Promise<R>,
): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await fn(items[i] as T);
      }
    }),
  );
  return out;
}

/**
 * The shard's first message `wanted` accepts; rejected when the shard exits first (`name` says
 * which kind of shard, for the error). Listening starts before the caller sends its request.
 */
export function shardReply<M>(child: ChildProcess, name: string, wanted: (m: M) => boolean): Promise<M> {
  return new Promise((resolve, reject) => {
    const onMessage = (m: M): void => {
      if (!wanted(m)) return;
      off();
      resolve(m);
    };
    const onExit = (code: number | null, signal: string | null): void => {
      off();
      reject(new Error(`${name} shard exited (${code ?? signal})`));
    };
    const off = (): void => {
      child.off('message', onMessage);
      child.off('exit', onExit);
    };
    child.on('message', onMessage);
    child.on('exit', onExit);
  });
}
