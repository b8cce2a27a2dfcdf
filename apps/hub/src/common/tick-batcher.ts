import DataLoader from 'dataloader';

/** How long a batch stays open for more keys, and how many it takes at most. */
export interface TickBatcherOptions {
  /** Keys asked for within this many ms of the batch's first share one `readMany`. */
  tickMs: number;
  /** A batch this full is read at once; the keys after it start the next one. */
  maxBatchSize: number;
}

/**
 * Coalesces the single-key reads that start within one short tick into one set-based read: a
 * release wakes hundreds of held long-polls at once, and each asking the database alone makes
 * them queue on the connection pool. `readMany` gets the keys in the order they were asked
 * (duplicates included) and answers each at the same index: a value, or an Error that fails
 * that caller alone; a `readMany` that throws fails every caller of the batch with its error.
 *
 * Nothing is remembered between batches (DataLoader's cache is off): every `load` is answered by a
 * read that started after it was asked, so it never sees older data than a read of its own would.
 */
export class TickBatcher<K, V> {
  private readonly loader: DataLoader<K, V>;

  constructor(
    readMany: (keys: readonly K[]) => Promise<readonly (V | Error)[]>,
    options: TickBatcherOptions,
  ) {
    if (!(options.tickMs >= 0)) throw new RangeError(`tickMs must be 0 or more, got ${options.tickMs}`);
    if (!(options.maxBatchSize >= 1))
      throw new RangeError(`maxBatchSize must be 1 or more, got ${options.maxBatchSize}`);
    this.loader = new DataLoader<K, V>(readMany, {
      cache: false,
      maxBatchSize: options.maxBatchSize,
      batchScheduleFn: (dispatch) => setTimeout(dispatch, options.tickMs),
    });
  }

  load(key: K): Promise<V> {
    return this.loader.load(key);
  }
}
