// Work that arrives while a commit runs waits and shares the next one; each caller is answered when its group commits.

/** One item waiting for the next group, and how to answer its caller. */
interface Waiting<T, R> {
  item: T;
  resolve: (result: R) => void;
  reject: (error: unknown) => void;
}

/**
 * Group commit: items submitted while a group is being committed wait, then the oldest go in one
 * group of at most `maxSize` (by `sizeOf`; always at least one item). A group that fails is tried
 * again one item at a time, so an item that cannot be committed fails alone and the others go through.
 */
export class GroupCommit<T, R> {
  private readonly waiting: Waiting<T, R>[] = [];
  /** Groups being committed now (at most `inFlight`). */
  private committing = 0;

  /**
   * @param commit commits a group and returns each item's result, in the group's order
   * @param missing the result of an item `commit` returned nothing for
   * @param inFlight how many groups may be committing at once: while one waits for its commit,
   *   the next is already built and sent, so the process is not idle for a whole round trip
   */
  constructor(
    private readonly commit: (group: T[]) => Promise<R[]>,
    private readonly sizeOf: (item: T) => number,
    private readonly maxSize: number,
    private readonly missing: () => R,
    private readonly inFlight = 1,
  ) {}

  /** The item's result, once the group holding it has committed. */
  submit(item: T): Promise<R> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ item, resolve, reject });
      if (this.committing < this.inFlight) void this.drain();
    });
  }

  private async drain(): Promise<void> {
    this.committing++;
    try {
      while (this.waiting.length > 0) {
        const group = this.takeGroup();
        try {
          const results = await this.commit(group.map((w) => w.item));
          group.forEach((w, i) => w.resolve(results[i] ?? this.missing()));
        } catch (e) {
          if (group.length === 1) {
            group[0]?.reject(e);
            continue;
          }
          // Alone, an item that cannot be committed fails by itself and the others go through.
          for (const w of group) {
            await this.commit([w.item]).then(([r]) => w.resolve(r ?? this.missing()), w.reject);
          }
        }
      }
    } finally {
      this.committing--;
    }
  }

  /** The oldest waiting items, up to maxSize (always at least one item). */
  private takeGroup(): Waiting<T, R>[] {
    let n = 0;
    let size = 0;
    while (n < this.waiting.length && (n === 0 || size + this.sizeOfAt(n) <= this.maxSize)) {
      size += this.sizeOfAt(n);
      n++;
    }
    return this.waiting.splice(0, n);
  }

  private sizeOfAt(n: number): number {
    const w = this.waiting[n];
    return w ? this.sizeOf(w.item) : 0;
  }
}
