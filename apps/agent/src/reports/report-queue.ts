import { mkdir, readFile, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { type Report, type ReportBatchResponse, reportBatchSchema } from '@flotilla/contract';
import { readJsonFile, writeFileAtomic } from '../state/atomic-file.js';

const BATCH_FILE = /^(\d{16})\.json$/;

export interface ReportQueueOptions {
  /** Oldest batches are dropped beyond this many files, so a long hub outage cannot fill the disk. */
  maxBatches?: number;
  /** At most this many reports go in one POST (the contract allows 1000). */
  maxReportsPerPost?: number;
  /**
   * Where reports the hub examined and refused as invalid are set aside, for an operator to read
   * (one JSON file each set-aside, with the hub's code and message). Default: `<dir>-refused`.
   */
  setAsideDir?: string;
}

/** Reports the hub read and refused, one by one, with its reason (from `refused` in its answer). */
export type RefusedReports = NonNullable<ReportBatchResponse['refused']>;

/** What was set aside and where: for the log line. */
export interface SetAside {
  file: string;
  reportIds: string[];
  code: string;
  message: string;
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
  private setAsideCount = 0;
  private writes: Promise<void> = Promise.resolve();
  /** The batches waiting for the write in flight, written together after it (see enqueue). */
  private waiting: { reports: Report[]; written: Promise<void> } | undefined;
  private readonly maxBatches: number;
  private readonly maxReportsPerPost: number;
  readonly setAsideDir: string;

  constructor(
    private readonly dir: string,
    options: ReportQueueOptions = {},
  ) {
    this.maxBatches = options.maxBatches ?? 10_000;
    this.maxReportsPerPost = Math.min(options.maxReportsPerPost ?? 500, 1000);
    this.setAsideDir = options.setAsideDir ?? `${dir}-refused`;
  }

  async init(): Promise<void> {
    await mkdir(this.setAsideDir, { recursive: true });
    this.setAsideCount = (await readdir(this.setAsideDir)).filter((n) => n.endsWith('.json')).length;
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

  /** Files in the set-aside directory: reports the hub refused as invalid (or unreadable batches). */
  get setAsideFiles(): number {
    return this.setAsideCount;
  }

  /** Durably appends one batch (split to fit a POST); resolves once it is on disk. */
  enqueue(reports: Report[]): Promise<void> {
    // Group commit: batches enqueued while a write is in flight go to disk together, in one file
    // (one fsync) rather than one file each. After a commit the ten targets of an agent finish
    // together and each queues two or three batches; one file each made every report wait for the
    // fsyncs of all those before it.
    const waiting = this.waiting;
    if (waiting) {
      waiting.reports.push(...reports);
      return waiting.written;
    }
    const next = { reports: [...reports], written: Promise.resolve() };
    this.waiting = next;
    // Writes are chained so that a batch never becomes visible to `deliver` before an earlier one.
    next.written = this.writes.then(() => {
      this.waiting = undefined;
      return this.write(next.reports);
    });
    this.writes = next.written.catch(() => undefined);
    return next.written;
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
   * answered. Stops at the first failure (rethrown) so that order is kept. Reports the hub's answer
   * lists as refused are set aside (see `setAsideDir`), never just deleted. Returns how many
   * reports were delivered (or set aside) and what was set aside.
   */
  async deliver(
    send: (reports: Report[]) => Promise<void | RefusedReports>,
    options: { onePerPost?: boolean } = {},
  ): Promise<number> {
    return (await this.deliverReporting(send, options)).delivered;
  }

  /** `deliver`, also saying what it set aside. */
  async deliverReporting(
    send: (reports: Report[]) => Promise<void | RefusedReports>,
    options: { onePerPost?: boolean } = {},
  ): Promise<{ delivered: number; setAside: SetAside[] }> {
    let delivered = 0;
    const setAside: SetAside[] = [];
    while (this.files.length > 0) {
      const seqs: number[] = [];
      const reports: Report[] = [];
      for (const seq of this.files) {
        if (options.onePerPost && seqs.length > 0) break;
        const batch = await this.read(seq);
        if (batch === undefined) {
          // A file that no longer parses can never be delivered: set aside as it is, not lost.
          if (seqs.length > 0) break;
          setAside.push(await this.setAsideFile(seq));
          continue;
        }
        if (reports.length > 0 && reports.length + batch.length > this.maxReportsPerPost) break;
        seqs.push(seq);
        reports.push(...batch);
      }
      if (seqs.length === 0) continue;
      const refused = reports.length > 0 ? await send(reports) : undefined;
      if (refused && refused.length > 0) setAside.push(...(await this.setAsideRefused(reports, refused)));
      for (const seq of seqs) {
        await rm(this.pathOf(seq), { force: true });
        this.files = this.files.filter((s) => s !== seq);
      }
      delivered += reports.length;
    }
    return { delivered, setAside };
  }

  /**
   * Posts the oldest batch one report at a time, for a batch the hub refused as invalid: each report
   * that `send` rejects with an error `isInvalid` accepts is set aside with that error, the others
   * are delivered. Any other error stops here (rethrown) and keeps the batch: a replay of what
   * was delivered is harmless, the hub deduplicates ids.
   */
  async isolateOldest(
    send: (report: Report) => Promise<void | RefusedReports>,
    isInvalid: (err: unknown) => { code: string; message: string } | undefined,
  ): Promise<SetAside[]> {
    const seq = this.files[0];
    if (seq === undefined) return [];
    const batch = await this.read(seq);
    if (batch === undefined) return [await this.setAsideFile(seq)];
    const setAside: SetAside[] = [];
    for (const report of batch) {
      let refused: void | RefusedReports;
      try {
        refused = await send(report);
      } catch (err) {
        const invalid = isInvalid(err);
        if (!invalid) throw err;
        refused = [{ index: 0, id: report.id, ...invalid }];
      }
      if (refused && refused.length > 0) setAside.push(...(await this.setAsideRefused([report], refused)));
    }
    await rm(this.pathOf(seq), { force: true });
    this.files = this.files.filter((s) => s !== seq);
    return setAside;
  }

  /** The refused reports of one POST, with the hub's reason, written beside the queue. */
  private async setAsideRefused(reports: Report[], refused: RefusedReports): Promise<SetAside[]> {
    const out: SetAside[] = [];
    for (const r of refused) {
      const report = reports[r.index]?.id === r.id ? reports[r.index] : reports.find((x) => x.id === r.id);
      const file = await this.writeSetAside({
        code: r.code,
        message: r.message,
        reports: report ? [report] : [],
      });
      out.push({ file, reportIds: [r.id], code: r.code, message: r.message });
    }
    return out;
  }

  private async setAsideFile(seq: number): Promise<SetAside> {
    const raw = await readFile(this.pathOf(seq), 'utf8').catch(() => '');
    const code = 'unreadable-batch';
    const message = `queued batch ${seq} no longer parses as a report batch`;
    const file = await this.writeSetAside({ code, message, raw });
    await rm(this.pathOf(seq), { force: true });
    this.files = this.files.filter((s) => s !== seq);
    return { file, reportIds: [], code, message };
  }

  private async writeSetAside(content: Record<string, unknown>): Promise<string> {
    const at = new Date().toISOString();
    const file = join(this.setAsideDir, `${at.replace(/[:.]/g, '-')}-${this.setAsideCount}.json`);
    await writeFileAtomic(file, JSON.stringify({ setAsideAt: at, ...content }, null, 2));
    this.setAsideCount++;
    return file;
  }

  /** The batch's reports; undefined for a file that no longer parses (set aside by the caller). */
  private async read(seq: number): Promise<Report[] | undefined> {
    try {
      const parsed = reportBatchSchema.safeParse(await readJsonFile(this.pathOf(seq)));
      return parsed.success ? parsed.data.reports : undefined;
    } catch {
      return undefined;
    }
  }

  private pathOf(seq: number): string {
    return join(this.dir, `${String(seq).padStart(16, '0')}.json`);
  }
}
