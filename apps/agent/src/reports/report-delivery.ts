import { type Report } from '@flotilla/contract';
import { type Logger } from 'pino';
import { type HubClient, HubCallError } from '../hub/hub-client.js';
import { Backoff, sleep } from '../util/backoff.js';
import { type ReportQueue, type SetAside } from './report-queue.js';

export interface ReportDeliveryDeps {
  queue: ReportQueue;
  hub: HubClient;
  /** The credential in use, if the agent has one yet. */
  credential: () => string | undefined;
  log: Logger;
  /** Back-off between failed posts. */
  backoff: { initialMs: number; maxMs: number };
  /** Aborted when the agent stops: the loop ends after the post in flight. */
  signal: AbortSignal;
}

/**
 * Posts the queued reports to the hub in order, and deletes each batch once the hub acknowledged it.
 * Only the hub's typed refusal sets a report aside (found by posting one batch, then one report, at
 * a time); anything else keeps every report queued and backs off.
 */
export class ReportDelivery {
  private wakeUp: (() => void) | undefined;

  constructor(private readonly deps: ReportDeliveryDeps) {}

  /** New reports are queued: post them now rather than at the next look. */
  wake(): void {
    this.wakeUp?.();
  }

  /** Delivers until the signal aborts. */
  async run(): Promise<void> {
    const { queue, hub, log, signal } = this.deps;
    const backoff = new Backoff(this.deps.backoff);
    let isolating = false;
    while (!signal.aborted) {
      const cred = this.deps.credential();
      if (queue.pendingBatches === 0 || !cred) {
        // Woken by a new report; the timeout catches a credential that arrived without one.
        await this.waitForWork(1_000);
        continue;
      }
      const post = async (reports: Report[]) => (await hub.postReports(cred, reports, signal)).refused;
      try {
        const { delivered, setAside } = await queue.deliverReporting(post, { onePerPost: isolating });
        this.logSetAside(setAside);
        if (delivered > 0) log.debug({ reports: delivered }, 'reports delivered');
        backoff.reset();
        isolating = false;
      } catch (caught) {
        if (signal.aborted) break;
        let err = caught;
        if (err instanceof HubCallError && err.code === 'hub-reports-invalid') {
          // The hub read the POST and refused it as invalid: find the batch (one file per post),
          // then the report in it (one report per post), and set only that aside.
          if (!isolating) {
            isolating = true;
            continue;
          }
          try {
            this.logSetAside(await queue.isolateOldest((report) => post([report]), invalidRefusal));
            continue;
          } catch (inner) {
            if (signal.aborted) break;
            err = inner;
          }
        }
        // Anything else (404 or 413 from an ingress, 401/403 from a proxy, 5xx, no answer) keeps
        // every report queued and tries again later; a 413 in smaller posts.
        if (err instanceof HubCallError && err.status === 413) isolating = true;
        const delay = backoff.next();
        log.warn(
          { code: (err as HubCallError).code, pending: queue.pendingBatches, retryInMs: delay },
          (err as Error).message,
        );
        await sleep(delay, signal);
      }
    }
  }

  private waitForWork(ms: number): Promise<void> {
    const { signal } = this.deps;
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.wakeUp = undefined;
        signal.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.wakeUp = done;
      signal.addEventListener('abort', done, { once: true });
    });
  }

  /** Reports set aside are an operator's to read: one error line each, naming the file. */
  private logSetAside(setAside: SetAside[]): void {
    for (const a of setAside) {
      this.deps.log.error(
        { code: a.code, reportIds: a.reportIds, file: a.file, setAsideTotal: this.deps.queue.setAsideFiles },
        `the hub refused a report as invalid; set aside in ${a.file}: ${a.message}`,
      );
    }
  }
}

/** The hub's typed refusal of a post as invalid, as the queue records it; undefined for any other error. */
function invalidRefusal(err: unknown): { code: string; message: string } | undefined {
  return err instanceof HubCallError && err.code === 'hub-reports-invalid'
    ? { code: err.apiCode ?? err.code, message: err.message }
    : undefined;
}
