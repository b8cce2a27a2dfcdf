import { readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { type Report, reportBatchSchema } from '@flotilla/contract';
import { readJsonFile, writeFileAtomic } from '../state/atomic-file.js';

const BATCH_FILE = /^(\d{16})\.json$/;

export interface ReportQueueOptions {
  /** Oldest batches are dropped beyond this many files, so a long hub outage cannot fill the disk. */
  maxBatches?: number;
  /** At most this many reports go in one POST (the contract allows 1000). */
  maxReportsPerPost?: number;
}

/**
 * A bounded, durable FIFO of report batches: one file per batch, named by a sequence number, in the
 * order the agent made them. A batch is deleted only after the hub acknowledged it, so a crash
 * between "sent" and "deleted" replays it — harmless, because the hub deduplicates report ids.
 */
export class ReportQueue {
  private nextSeq = 0;
  private files: number[] = [];
  private droppedCount = 0;
  private writes: Promise<void> = Promise.resolve();
  private readonly maxBatches: number;
  private readonly maxReportsPerPost: number;

  constructor(
    private readonly dir: string,
    options: ReportQueueOptions = {},
  ) {
    this.maxBatches = options.maxBatches ?? 10_000;
    this.maxReportsPerPost = Math.min(options.maxReportsPerPost ?? 500, 1000);
  }

  async init(): Promise<void> {
    const names = await readdir(this.dir);
    this.files = names
      .map((n) => BATCH_FILE.exec(n)?.[1])
      .filter((s): s is string => s !== undefined)
      .map(Number)
      .sort((a, b) => a - b);
    this.nextSeq = (this.files.at(-1) ?? -1) + 1;
  }

  get pendingBatches(): number {
    return this.files.length;
  }

  /** Batches discarded because the queue was full (since this process started). */
  get dropped(): number {
    return this.droppedCount;
  }

  /** Durably appends one batch (split to fit a POST); resolves once it is on disk. */
  enqueue(reports: Report[]): Promise<void> {
    // Writes are chained so that a batch never becomes visible to `deliver` before an earlier one.
    const write = this.writes.then(() => this.write(reports));
    this.writes = write.catch(() => undefined);
    return write;
  }

  private async write(reports: Report[]): Promise<void> {
    for (let i = 0; i < reports.length; i += this.maxReportsPerPost) {
      const seq = this.nextSeq++;
      await writeFileAtomic(
        this.pathOf(seq),
        JSON.stringify({ reports: reports.slice(i, i + this.maxReportsPerPost) }),
      );
      this.files.push(seq);
    }
    while (this.files.length > this.maxBatches) {
      const oldest = this.files.shift();
      if (oldest === undefined) break;
      await rm(this.pathOf(oldest), { force: true });
      this.droppedCount++;
    }
  }

  /**
   * Sends queued batches oldest first, several files per POST, deleting each file once the hub has
   * answered. Stops at the first failure (rethrown) so that order is kept.
   * Returns how many reports were delivered.
   */
  async deliver(
    send: (reports: Report[]) => Promise<void>,
    options: { onePerPost?: boolean } = {},
  ): Promise<number> {
    let delivered = 0;
    while (this.files.length > 0) {
      const seqs: number[] = [];
      const reports: Report[] = [];
      for (const seq of this.files) {
        if (options.onePerPost && seqs.length > 0) break;
        const batch = await this.read(seq);
        if (reports.length > 0 && reports.length + batch.length > this.maxReportsPerPost) break;
        seqs.push(seq);
        reports.push(...batch);
      }
      if (reports.length > 0) await send(reports);
      for (const seq of seqs) {
        await rm(this.pathOf(seq), { force: true });
        this.files = this.files.filter((s) => s !== seq);
      }
      delivered += reports.length;
    }
    return delivered;
  }

  /**
   * Removes the oldest batch without sending it — only for a batch the hub refuses outright, which
   * would otherwise block every report behind it. Returns what was dropped, for the log.
   */
  async discardOldest(): Promise<Report[]> {
    const seq = this.files.shift();
    if (seq === undefined) return [];
    const reports = await this.read(seq);
    await rm(this.pathOf(seq), { force: true });
    this.droppedCount++;
    return reports;
  }

  private async read(seq: number): Promise<Report[]> {
    try {
      const parsed = reportBatchSchema.safeParse(await readJsonFile(this.pathOf(seq)));
      // A batch that no longer parses can never be delivered; skipping it keeps the rest flowing.
      return parsed.success ? parsed.data.reports : [];
    } catch {
      return [];
    }
  }

  private pathOf(seq: number): string {
    return join(this.dir, `${String(seq).padStart(16, '0')}.json`);
  }
}
